// C = alpha * A @ B + beta * C, row-major, x walks the rows of C (as in the well-known worklog); written here.
/* @fsr
bench = { M = 4096, N = 4096, K = 4096 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 33, N = 17, K = 65 }, { M = 100, N = 130, K = 7 } ]
grid  = ["cdiv(M, 32)", "cdiv(N, 32)"]
block = [32, 32]
[args]
M = "M"
N = "N"
K = "K"
alpha = 1.5
A = "in[M * K]"
B = "in[K * N]"
beta = 0.5
C = "inout[M * N]"
*/
__global__ void gemm_naive(int M, int N, int K, float alpha, const float *A,
                           const float *B, float beta, float *C) {
  const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < M && y < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[x * K + i] * B[i * N + y];
    }
    C[x * N + y] = alpha * tmp + beta * C[x * N + y];
  }
}
