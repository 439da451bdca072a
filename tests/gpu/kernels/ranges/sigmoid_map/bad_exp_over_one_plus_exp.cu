// e^x / (1 + e^x): inf / inf = NaN once x passes 88.
__global__ void sigmoid_map(float* out, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float e = expf(x[i]);
        out[i] = e / (1.0f + e);
    }
}
