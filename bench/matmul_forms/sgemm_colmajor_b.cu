// C = A @ B with A and C row-major and B stored column-major (B[col * K + k]), one output a thread.
/* @fsr
bench = { M = 1000, N = 3000, K = 777 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 33, N = 17, K = 65 }, { M = 100, N = 130, K = 7 } ]
grid  = ["cdiv(N, 16)", "cdiv(M, 16)"]
block = [16, 16]
[args]
A = "in[M * K]"
Bt = "in[N * K]"
C = "out[M * N]"
M = "M"
N = "N"
K = "K"
*/
__global__ void matmul_bt(const float* A, const float* Bt, float* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++)
            sum += A[row * K + k] * Bt[col * K + k];
        C[row * N + col] = sum;
    }
}
