// Subtle: reads one element past the end (a[n]) but never uses it in the result;
// only compute-sanitizer's memcheck sees it.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        float x = a[i] + b[i];
        if (i < n) c[i] = x;
    }
}
