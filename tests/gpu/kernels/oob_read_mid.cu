// Wrong in memory only, at mid sizes: above 4096 elements even threads also load their right
// neighbour (volatile: the load stays), and for an odd n the last pair reads one element past
// the end of a. The values are right at every size; only a sanitizer with exact allocations
// at that size sees it.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (n > 4096 && i % 2 == 0) {
        volatile const float* pa = a;
        float next = pa[i + 1];
        (void)next;
    }
    c[i] = a[i] + b[i];
}
