// BLAS-style column-major C = alpha * A @ B + beta * C in double, leading dimensions as parameters.
/* @fsr
bench = { M = 1024, N = 1024, K = 1024 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 33, N = 17, K = 65 }, { M = 100, N = 130, K = 7 } ]
grid  = ["cdiv(M, 16)", "cdiv(N, 16)"]
block = [16, 16]
[args]
M = "M"
N = "N"
K = "K"
alpha = 0.75
A = "in[M * K]"
lda = "M"
B = "in[K * N]"
ldb = "K"
beta = -0.5
C = "inout[M * N]"
ldc = "M"
*/
__global__ void dgemm_cm(int M, int N, int K, double alpha, const double* A, int lda, const double* B, int ldb,
                         double beta, double* C, int ldc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    double acc = 0.0;
    for (int l = 0; l < K; ++l)
        acc += A[i + l * lda] * B[l + j * ldb];
    C[i + j * ldc] = alpha * acc + beta * C[i + j * ldc];
}
