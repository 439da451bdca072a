/* @fsr
grid  = "rows"
block = 256
*/
__global__ void rowsum(int rows, int cols, const float* x, float* out)
{
    __shared__ float partial[256];  // one block per row, a tree in shared memory
    const float* r = x + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += r[c];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
