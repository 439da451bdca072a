// Token + position embedding, llm.c-like: int token ids, three sizes B, T, C.
#include <cuda_runtime.h>
#include <cassert>

__global__ void encoder_forward_kernel(float* out, const int* inp, const float* wte, const float* wpe,
                                       int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int N = B * T * C;
    if (idx < N) {
        int bt = idx / C;
        int b = bt / T;
        int t = bt % T;
        int c = idx % C;
        int ix = inp[b * T + t];
        out[b * T * C + t * C + c] = wte[ix * C + c] + wpe[t * C + c];
    }
}

int main() {
    int B = 8;
    int T = 1024;
    int C = 768;
    int V = 50257;
    float *out, *wte, *wpe;
    int *inp;
    cudaMalloc(&out, B * T * C * sizeof(float));
    cudaMalloc(&inp, B * T * sizeof(int));
    cudaMalloc(&wte, V * C * sizeof(float));
    cudaMalloc(&wpe, T * C * sizeof(float));
    const int N = B * T * C;
    const int block_size = 512;
    const int grid_size = (N + block_size - 1) / block_size;
    encoder_forward_kernel<<<grid_size, block_size>>>(out, inp, wte, wpe, B, T, C);
    return 0;
}
