// CSR sparse matrix-vector product, one thread per row: row pointers, column indices, values.
#include <cuda_runtime.h>

__global__ void spmv_csr(int num_rows, const int* row_ptr, const int* col_idx, const float* vals,
                         const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float dot = 0;
        for (int jj = row_ptr[row]; jj < row_ptr[row + 1]; jj++) dot += vals[jj] * x[col_idx[jj]];
        y[row] = dot;
    }
}

int main() {
    int num_rows = 100000, nnz = 1000000;
    int *row_ptr, *col_idx;
    float *vals, *x, *y;
    cudaMalloc(&row_ptr, (num_rows + 1) * sizeof(int));
    cudaMalloc(&col_idx, nnz * sizeof(int));
    cudaMalloc(&vals, nnz * sizeof(float));
    cudaMalloc(&x, num_rows * sizeof(float));
    cudaMalloc(&y, num_rows * sizeof(float));
    spmv_csr<<<(num_rows + 255) / 256, 256>>>(num_rows, row_ptr, col_idx, vals, x, y);
    return 0;
}
