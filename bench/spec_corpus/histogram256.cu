// 256-bin byte histogram with shared-memory privatisation; bins zeroed with cudaMemset.
#include <cuda_runtime.h>
#define BIN_COUNT 256

__global__ void histogram(const unsigned char* data, unsigned int* bins, int n) {
    __shared__ unsigned int local[BIN_COUNT];
    for (int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

int main() {
    const int byteCount = 64 * 1048576;
    unsigned char* d_Data;
    unsigned int* d_Histogram;
    cudaMalloc((void**)&d_Data, byteCount);
    cudaMalloc((void**)&d_Histogram, BIN_COUNT * sizeof(unsigned int));
    cudaMemset(d_Histogram, 0, BIN_COUNT * sizeof(unsigned int));
    histogram<<<240, 192>>>(d_Data, d_Histogram, byteCount);
    return 0;
}
