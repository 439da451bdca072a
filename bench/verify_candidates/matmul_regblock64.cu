// Register blocking: 64x64 tiles of C per block of 16x16 threads, 4x4 outputs per thread, with
// A's tile stored transposed so each thread reads a column of it.
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4

/* @fsr
bench = { M = 2048, N = 2048, K = 2048 }
tests = [ { M = 1, N = 1, K = 1 }, { M = 65, N = 33, K = 17 }, { M = 256, N = 128, K = 300 } ]
grid  = ["cdiv(N, 64)", "cdiv(M, 64)"]
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
__global__ void matmul(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y;
    int tid = ty * 16 + tx;
    int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int t = 0; t < K; t += BK) {
        for (int i = tid; i < BM * BK; i += 256) {
            int m = i / BK, k = i % BK;
            As[k][m] = (rowBase + m < M && t + k < K) ? A[(rowBase + m) * K + t + k] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += 256) {
            int k = i / BN, n = i % BN;
            Bs[k][n] = (t + k < K && colBase + n < N) ? B[(t + k) * N + colBase + n] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) {
            int r = rowBase + ty * TM + i, c = colBase + tx * TN + j;
            if (r < M && c < N) C[r * N + c] = acc[i][j];
        }
}
