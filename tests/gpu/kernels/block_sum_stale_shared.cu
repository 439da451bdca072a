// Wrong: threads past n skip the zero-fill of their shared slot, so the last block sums slots
// no thread of it wrote. Right whenever those slots hold zeros, e.g. just after the original
// (same layout) ran on that SM, and whenever n is a multiple of 256.
__global__ void block_sum(int n, const float* x, float* partial)
{
    __shared__ float s[256];
    int i = blockIdx.x * 256 + threadIdx.x;
    if (i < n) s[threadIdx.x] = x[i];
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
