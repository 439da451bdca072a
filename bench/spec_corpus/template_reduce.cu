// Templated block reduction instantiated from the launch: element type and block size as template arguments.
#include <cuda_runtime.h>

template <typename T, int BLOCK>
__global__ void block_sum(const T* __restrict__ in, T* __restrict__ partial, int n) {
    __shared__ T s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

int main() {
    const int n = 1 << 23;
    const int blocks = (n + 255) / 256;
    double *in, *partial;
    cudaMalloc(&in, n * sizeof(double));
    cudaMalloc(&partial, blocks * sizeof(double));
    block_sum<double, 256><<<blocks, 256>>>(in, partial, n);
    return 0;
}
