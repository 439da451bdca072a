// Host side of kernels_ops.cu: the launches live here.
#include <cuda_runtime.h>
#include "kernels_ops.cuh"

static const int kRows = 4096;
static const int kCols = 1000;

int run_ops() {
    float *x, *bias, *mx;
    cudaMalloc(&x, kRows * kCols * sizeof(float));
    cudaMalloc(&bias, kCols * sizeof(float));
    cudaMalloc(&mx, kRows * sizeof(float));
    int threads = 256;
    bias_add<<<(kRows * kCols + threads - 1) / threads, threads>>>(x, bias, kRows, kCols);
    row_max<<<(kRows + threads - 1) / threads, threads>>>(x, mx, kRows, kCols);
    return cudaDeviceSynchronize();
}
