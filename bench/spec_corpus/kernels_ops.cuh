// Declarations of kernels_ops.cu for the host file.
#pragma once
__global__ void bias_add(float* x, const float* bias, int rows, int cols);
__global__ void row_max(const float* x, float* out, int rows, int cols);
