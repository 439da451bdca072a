/* @fsr
grid  = "cdiv(N * 32, 256)"
block = 256
*/
__global__ void layernorm(float* out, const float* inp, const float* w, const float* b, int N, int C)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per row
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    float sum = 0.0f;
    for (int c = lane; c < C; c += 32) sum += x[c];
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    float mean = sum / C;
    float sq = 0.0f;
    for (int c = lane; c < C; c += 32) { float d = x[c] - mean; sq += d * d; }
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    float rstd = rsqrtf(sq / C + 1e-5f);
    float* y = out + (size_t)row * C;
    for (int c = lane; c < C; c += 32) y[c] = rstd * (x[c] - mean) * w[c] + b[c];
}
