// A batch of row-major products, one matrix of the batch per grid z: C[b] = A[b] @ B[b].
/* @fsr
bench = { batch = 16, M = 512, N = 512, K = 256 }
tests = [ { batch = 1, M = 1, N = 1, K = 1 }, { batch = 3, M = 33, N = 17, K = 65 } ]
grid  = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
block = [16, 16, 1]
[args]
A = "in[batch * M * K]"
B = "in[batch * K * N]"
C = "out[batch * M * N]"
M = "M"
N = "N"
K = "K"
*/
__global__ void bmm(const float* A, const float* B, float* C, int M, int N, int K)
{
    const float* a = A + (size_t)blockIdx.z * M * K;
    const float* b = B + (size_t)blockIdx.z * K * N;
    float* c = C + (size_t)blockIdx.z * M * N;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k)
            s += a[row * K + k] * b[k * N + col];
        c[row * N + col] = s;
    }
}
