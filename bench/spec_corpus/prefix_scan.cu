// Per-block inclusive scan (Hillis-Steele) in shared memory, block sums written out.
#include <cuda_runtime.h>
#define BLOCK 512

__global__ void block_scan(const int* in, int* out, int* block_sums, int n) {
    __shared__ int s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < BLOCK; off <<= 1) {
        int v = threadIdx.x >= off ? s[threadIdx.x - off] : 0;
        __syncthreads();
        s[threadIdx.x] += v;
        __syncthreads();
    }
    if (i < n) out[i] = s[threadIdx.x];
    if (threadIdx.x == BLOCK - 1) block_sums[blockIdx.x] = s[BLOCK - 1];
}

int main() {
    int n = 1 << 22;
    int blocks = (n + BLOCK - 1) / BLOCK;
    int *in, *out, *sums;
    cudaMalloc(&in, n * sizeof(int));
    cudaMalloc(&out, n * sizeof(int));
    cudaMalloc(&sums, blocks * sizeof(int));
    block_scan<<<blocks, BLOCK>>>(in, out, sums, n);
    return 0;
}
