__global__ void rowsum(int rows, int cols, const float* x, float* out)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f, carry = 0.0f;  // compensated (Kahan) summation
        for (int c = 0; c < cols; ++c) {
            float y = x[(size_t)r * cols + c] - carry;
            float t = s + y;
            carry = (t - s) - y;
            s = t;
        }
        out[r] = s;
    }
}
