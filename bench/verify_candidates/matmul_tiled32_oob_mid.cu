// BROKEN: the A load checks the row but not the column, so the last row reads past the end of A
// when K is not a multiple of 32 (a mid test size); the product with B's zero padding hides it
// unless what it reads is NaN.
#define TILE 32

/* @fsr
bench = { M = 2048, N = 2048, K = 2048 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 65, N = 33, K = 17 }, { M = 256, N = 128, K = 300 } ]
grid  = ["cdiv(N, 32)", "cdiv(M, 32)"]
block = [32, 32]
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
__global__ void matmul(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
