#include <cstdio>
#include <cstdlib>
// Matrices are stored in row-major order: M(row, col) = *(M.elements + row * M.stride + col)
typedef struct {
    int width;
    int height;
    int stride;
    float* elements;
} Matrix;

#define BLOCK_SIZE 16

/* @fsr
bench = { N = 64 }
tests = [ { N = 16 }, { N = 100 } ]
grid = ["cdiv(N, 16)", "cdiv(N, 16)"]
block = [16, 16]
[args]
A = { width = "N", height = "N", stride = "N + 5", elements = "in[N * (N + 5)]" }
B = { width = "N", height = "N", stride = "N", elements = "in[N * N]" }
C = { width = "N", height = "N", stride = "N + 3", elements = "inout[N * (N + 3)]" }
*/
__global__ void MatMulKernel(Matrix A, Matrix B, Matrix C)
{
    float Cvalue = 0;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= C.height || col >= C.width) return;
    for (int e = 0; e < A.width; ++e)
        Cvalue += A.elements[row * A.stride + e] * B.elements[e * B.stride + col];
    C.elements[row * C.stride + col] = Cvalue;
}

void MatMul(const Matrix A, const Matrix B, Matrix C)
{
    Matrix d_A;
    d_A.width = d_A.stride = A.width; d_A.height = A.height;
    size_t size = A.width * A.height * sizeof(float);
    cudaMalloc(&d_A.elements, size);
    cudaMemcpy(d_A.elements, A.elements, size, cudaMemcpyHostToDevice);
    Matrix d_B;
    d_B.width = d_B.stride = B.width; d_B.height = B.height;
    size = B.width * B.height * sizeof(float);
    cudaMalloc(&d_B.elements, size);
    cudaMemcpy(d_B.elements, B.elements, size, cudaMemcpyHostToDevice);
    Matrix d_C;
    d_C.width = d_C.stride = C.width; d_C.height = C.height;
    size = C.width * C.height * sizeof(float);
    cudaMalloc(&d_C.elements, size);
    dim3 dimBlock(BLOCK_SIZE, BLOCK_SIZE);
    dim3 dimGrid((B.width + BLOCK_SIZE - 1) / BLOCK_SIZE, (A.height + BLOCK_SIZE - 1) / BLOCK_SIZE);
    MatMulKernel<<<dimGrid, dimBlock>>>(d_A, d_B, d_C);
    cudaMemcpy(C.elements, d_C.elements, size, cudaMemcpyDeviceToHost);
    cudaFree(d_A.elements); cudaFree(d_B.elements); cudaFree(d_C.elements);
}

int main() {
    int n = 512;
    Matrix A{n, n, n, (float*)malloc(n * n * 4)}, B{n, n, n, (float*)malloc(n * n * 4)}, C{n, n, n, (float*)malloc(n * n * 4)};
    for (int i = 0; i < n * n; ++i) { A.elements[i] = rand() / (float)RAND_MAX; B.elements[i] = rand() / (float)RAND_MAX; }
    MatMul(A, B, C);
    printf("%f\n", C.elements[0]);
}
