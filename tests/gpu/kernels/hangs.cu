// Hang: spins forever on a flag nothing sets.
__device__ volatile int never;
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    while (never == 0) { }
    if (i < n) c[i] = a[i] + b[i];
}
