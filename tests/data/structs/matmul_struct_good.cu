__global__ void MatMulKernel(Matrix A, Matrix B, Matrix C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= C.height || col >= C.width) return;
    const float* a = A.elements + row * A.stride;
    float acc = 0.f;
    for (int e = 0; e < A.width; ++e)
        acc += a[e] * B.elements[e * B.stride + col];
    C.elements[row * C.stride + col] = acc;
}
