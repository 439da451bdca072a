// Mixed precision residual add: __half through a typedef, a host vector of the element type.
#include <cuda_fp16.h>
#include <vector>
typedef __half floatX;

__global__ void residual_forward_kernel(floatX* out, const floatX* inp1, const floatX* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        out[idx] = __float2half(__half2float(inp1[idx]) + __half2float(inp2[idx]));
    }
}

int main() {
    const int N = 8 * 1024 * 768;
    floatX *out, *a, *b;
    cudaMalloc(&out, N * sizeof(floatX));
    cudaMalloc(&a, N * sizeof(floatX));
    cudaMalloc(&b, N * sizeof(floatX));
    int block_size = 256;
    residual_forward_kernel<<<(N + block_size - 1) / block_size, block_size>>>(out, a, b, N);
    return 0;
}
