// A dynamic shared-memory kernel launched on a stream: smem sized from the block.
#include <cuda_runtime.h>

__global__ void shift_right(const int* in, int* out, int n) {
    extern __shared__ int tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    if (i < n) out[i] = threadIdx.x > 0 ? tile[threadIdx.x - 1] : (i > 0 ? in[i - 1] : 0);
}

int main() {
    const int n = 5000000;
    int *in, *out;
    cudaMalloc(&in, n * sizeof(int));
    cudaMalloc(&out, n * sizeof(int));
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    const int threads = 512;
    shift_right<<<(n + threads - 1) / threads, threads, threads * sizeof(int), stream>>>(in, out, n);
    cudaStreamSynchronize(stream);
    return 0;
}
