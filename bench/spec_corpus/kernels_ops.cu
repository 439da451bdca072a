// Kernels in one .cu, launched from ops_launch.cpp (compiled by nvcc as CUDA).
#include <cuda_runtime.h>

__global__ void bias_add(float* x, const float* bias, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) x[i] += bias[i % cols];
}

__global__ void row_max(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = x[r * cols];
    for (int c = 1; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
    out[r] = m;
}
