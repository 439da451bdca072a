/* @fsr
grid  = "cdiv(N * 32, 128)"
block = 128
*/
__global__ void softmax(float* out, const float* inp, int N, int C)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per row
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    float m = -INFINITY, s = 0.0f;  // online max and sum: one pass over the row
    for (int j = lane; j < C; j += 32) {
        float v = x[j];
        float m2 = fmaxf(m, v);
        s = s * __expf(m - m2) + __expf(v - m2);
        m = m2;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        float mm = fmaxf(m, m2);
        s = s * __expf(m - mm) + s2 * __expf(m2 - mm);
        m = mm;
    }
    float inv = 1.0f / s;
    float* y = out + (size_t)row * C;
    for (int j = lane; j < C; j += 32) y[j] = __expf(x[j] - m) * inv;
}
