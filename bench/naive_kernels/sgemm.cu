// C = A * B, row-major, one output element per thread.
/* @fsr
bench = { M = 1024, N = 1024, K = 1024 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 33, N = 17, K = 65 }, { M = 100, N = 130, K = 7 } ]
grid  = ["cdiv(N, 16)", "cdiv(M, 16)"]
block = [16, 16]
rtol  = 1e-4
atol  = 1e-4
[args]
A = "in[M * K]"
B = "in[K * N]"
C = "out[M * N]"
M = "M"
N = "N"
K = "K"
*/
__global__ void sgemm_naive(const float* A, const float* B, float* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = acc;
    }
}
