// sigmoid(x) = (1 + tanh(x / 2)) / 2.
__global__ void sigmoid_map(float* out, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.5f * tanhf(0.5f * x[i]) + 0.5f;
}
