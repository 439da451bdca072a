// Double-precision logistic function with a grid-stride loop and a fixed grid of 4 x SM count.
#include <cuda_runtime.h>
#include <cmath>

__global__ void sigmoid(const double* __restrict__ x, double* __restrict__ y, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        y[i] = 1.0 / (1.0 + exp(-x[i]));
}

int main() {
    size_t n = 1 << 24;
    double *x, *y;
    cudaMalloc(&x, n * sizeof(double));
    cudaMalloc(&y, n * sizeof(double));
    sigmoid<<<132 * 4, 256>>>(x, y, n);
    return 0;
}
