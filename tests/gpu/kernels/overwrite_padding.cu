// Wrong in memory only: the first thread past the end writes a zero just after c when n is
// not a multiple of 8, into what an allocator would round the buffer up to.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
    else if (i == n && n % 8) c[i] = 0.0f;
}
