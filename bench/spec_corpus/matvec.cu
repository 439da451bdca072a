// Dense matrix-vector product y = A x, one thread per row; M, N from #defines.
#include <cuda_runtime.h>
#define M 8192
#define N 4096

__global__ void gemv(const float* A, const float* x, float* y, int m, int n) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        float acc = 0.0f;
        for (int j = 0; j < n; ++j) acc += A[(size_t)row * n + j] * x[j];
        y[row] = acc;
    }
}

int main() {
    float *A, *x, *y;
    cudaMalloc(&A, sizeof(float) * M * N);
    cudaMalloc(&x, sizeof(float) * N);
    cudaMalloc(&y, sizeof(float) * M);
    gemv<<<(M + 127) / 128, 128>>>(A, x, y, M, N);
    return 0;
}
