// Training-code shape: floatX typedef, a launcher function, sizes in main.
#include <cuda_runtime.h>
typedef float floatX;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

__global__ void relu_forward_kernel(floatX* out, const floatX* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        floatX v = inp[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

int main() {
    int B = 8, T = 1024, C = 768;
    floatX *d_out, *d_inp;
    cudaMalloc(&d_out, B * T * C * sizeof(floatX));
    cudaMalloc(&d_inp, B * T * C * sizeof(floatX));
    const int block_size = 256;
    const int N = B * T * C;
    relu_forward_kernel<<<CEIL_DIV(N, block_size), block_size>>>(d_out, d_inp, N);
    cudaDeviceSynchronize();
    return 0;
}
