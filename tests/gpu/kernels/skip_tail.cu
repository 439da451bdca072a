// Wrong: drops the tail that is not a multiple of the block size (a missing bounds case).
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n & ~255)) c[i] = a[i] + b[i];
}
