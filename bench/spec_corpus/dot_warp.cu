// Dot product with warp shuffles and one atomic per warp.
#include <cuda_runtime.h>

__inline__ __device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}

__global__ void dot(const float* a, const float* b, float* result, int n) {
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += a[i] * b[i];
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0) atomicAdd(result, s);
}

int main() {
    int n = 1 << 24;
    float *a, *b, *r;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&r, sizeof(float));
    cudaMemset(r, 0, sizeof(float));
    dot<<<1024, 256>>>(a, b, r, n);
    return 0;
}
