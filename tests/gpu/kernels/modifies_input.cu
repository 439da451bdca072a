// Wrong: right output, but scribbles on an input.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
        ((float*)b)[i] = 0.0f;
    }
}
