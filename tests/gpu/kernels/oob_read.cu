// Subtle: the last thread reads one element past the end of a (volatile, so the compiler keeps
// the load) and ignores it: outputs are right, only compute-sanitizer's memcheck sees it.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        volatile const float* peek = a;
        float unused = peek[i + 1];
        (void)unused;
        c[i] = a[i] + b[i];
    }
}
