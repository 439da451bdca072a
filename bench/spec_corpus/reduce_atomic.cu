// Sum reduction: shared-memory tree per block, then one atomicAdd per block into a zeroed result.
#include <cuda_runtime.h>
#define THREADS 256

__global__ void reduce_sum(const float* __restrict__ in, float* out, int n) {
    __shared__ float buf[THREADS];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, buf[0]);
}

int main() {
    const int n = 1 << 24;
    float *d_in, *d_out;
    cudaMalloc(&d_in, n * sizeof(float));
    cudaMalloc(&d_out, sizeof(float));
    cudaMemset(d_out, 0, sizeof(float));
    reduce_sum<<<(n + THREADS - 1) / THREADS, THREADS>>>(d_in, d_out, n);
    return 0;
}
