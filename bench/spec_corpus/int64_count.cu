// Counting predicate hits into 64-bit counters per block, with long long sizes.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void count_positive(const float* x, unsigned long long* counts, int64_t n) {
    __shared__ unsigned long long c;
    if (threadIdx.x == 0) c = 0;
    __syncthreads();
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x)
        if (x[i] > 0.0f) atomicAdd(&c, 1ull);
    __syncthreads();
    if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

int main() {
    int64_t n = 100000000;
    const int blocks = 528;
    float* x;
    unsigned long long* counts;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&counts, blocks * sizeof(unsigned long long));
    count_positive<<<blocks, 256>>>(x, counts, n);
    return 0;
}
