// Row softmax, one thread per row (naive), launched on an N x C matrix.
#include <cuda_runtime.h>
#include <cmath>

__global__ void softmax_forward_kernel1(float* out, const float* inp, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* inp_row = inp + i * C;
        float* out_row = out + i * C;
        float maxval = -INFINITY;
        for (int j = 0; j < C; j++) maxval = fmaxf(maxval, inp_row[j]);
        double sum = 0.0;
        for (int j = 0; j < C; j++) {
            out_row[j] = expf(inp_row[j] - maxval);
            sum += out_row[j];
        }
        for (int j = 0; j < C; j++) out_row[j] /= (float)sum;
    }
}

int main() {
    int B = 8, T = 1024;
    int V = 50304;
    int N = B * T;
    float *d_out, *d_inp;
    cudaMalloc(&d_out, (size_t)N * V * sizeof(float));
    cudaMalloc(&d_inp, (size_t)N * V * sizeof(float));
    int block_size = 128;
    int grid_size = (N + block_size - 1) / block_size;
    softmax_forward_kernel1<<<grid_size, block_size>>>(d_out, d_inp, N, V);
    return 0;
}
