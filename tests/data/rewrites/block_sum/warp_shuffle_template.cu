#define FULL_MASK 0xffffffffu

template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

struct Partials {
    float warp[8];
};

__global__ void block_sum(int n, const float* __restrict__ x, float* __restrict__ partial)
{
    __shared__ Partials p;
    int i = blockIdx.x * 256 + threadIdx.x;
    float v = warp_sum(i < n ? x[i] : 0.0f);
    if ((threadIdx.x & 31) == 0) p.warp[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < 8 ? p.warp[threadIdx.x] : 0.0f;
        w = warp_sum(w);
        if (threadIdx.x == 0) partial[blockIdx.x] = w;
    }
}
