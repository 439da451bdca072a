// Wrong in memory only: every thread loads a[i - 1] (volatile: the load stays) and discards
// it; at i = 0 that is before the start of a.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        volatile const float* pa = a;
        float prev = pa[i - 1];
        (void)prev;
        c[i] = a[i] + b[i];
    }
}
