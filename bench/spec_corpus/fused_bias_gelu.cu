// Fused bias + GELU over a [rows x cols] activation, bias broadcast over rows.
#include <cuda_runtime.h>
#include <math.h>

__global__ void bias_gelu(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ bias,
                          int rows, int cols) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < rows * cols) {
        float v = in[idx] + bias[idx % cols];
        out[idx] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}

int main() {
    int rows = 16384, cols = 3072;
    float *out, *in, *bias;
    cudaMalloc(&out, rows * cols * sizeof(float));
    cudaMalloc(&in, rows * cols * sizeof(float));
    cudaMalloc(&bias, cols * sizeof(float));
    int threads = 256;
    int blocks = (rows * cols + threads - 1) / threads;
    bias_gelu<<<blocks, threads>>>(out, in, bias, rows, cols);
    return 0;
}
