// Vectorised copy with float4 when the length allows it; n counts float4 elements.
#include <cuda_runtime.h>

__global__ void copy4(const float4* __restrict__ src, float4* __restrict__ dst, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) dst[i] = src[i];
}

int main() {
    int n = 1 << 26;
    float *src, *dst;
    cudaMalloc(&src, n * sizeof(float));
    cudaMalloc(&dst, n * sizeof(float));
    int n4 = n / 4;
    copy4<<<(n4 + 255) / 256, 256>>>(reinterpret_cast<float4*>(src), reinterpret_cast<float4*>(dst), n4);
    return 0;
}
