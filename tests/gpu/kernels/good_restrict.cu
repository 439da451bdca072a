// Correct: __restrict__ and a grid-stride loop.
__global__ void vadd(int n, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}
