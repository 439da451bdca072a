// Naive SGEMM C = alpha A B + beta C with bounds checks, 32 x 32 blocks (the "how to optimize" starting point).
#include <cuda_runtime.h>
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
    const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < M && y < N) {
        float tmp = 0.0;
        for (int i = 0; i < K; ++i) tmp += A[x * K + i] * B[i * N + y];
        C[x * N + y] = alpha * tmp + beta * C[x * N + y];
    }
}

int main() {
    int M = 4096, N = 4096, K = 4096;
    float alpha = 0.5, beta = 3.0;
    float *dA, *dB, *dC;
    cudaMalloc((void **)&dA, sizeof(float) * M * K);
    cudaMalloc((void **)&dB, sizeof(float) * K * N);
    cudaMalloc((void **)&dC, sizeof(float) * M * N);
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32, 32);
    sgemm_naive<<<gridDim, blockDim>>>(M, N, K, alpha, dA, dB, beta, dC);
    return 0;
}
