// Crash: writes far out of bounds, which poisons the CUDA context.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i + (1 << 30)] = a[i] + b[i];
}
