// Naive single-precision matrix multiply, C = A (MxK) * B (KxN), row-major.
// The ref line makes torch's matmul a second oracle and the library baseline.

/* @fsr
bench = { M = 2048, N = 2048, K = 2048 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 65, N = 33, K = 17 }, { M = 256, N = 128, K = 300 } ]
grid  = ["cdiv(N, 16)", "cdiv(M, 16)"]
block = [16, 16]
rtol  = 1e-4
atol  = 1e-4
[args]
M = "M"
N = "N"
K = "K"
A = "in[M * K] uniform(-1, 1)"
B = "in[K * N] uniform(-1, 1)"
C = "out[M * N]"
[ref]
C = "(A.view(M, K).double() @ B.view(K, N).double()).float()"
*/
__global__ void matmul(int M, int N, int K, const float* A, const float* B, float* C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
