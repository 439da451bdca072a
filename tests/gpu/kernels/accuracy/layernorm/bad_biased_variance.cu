__global__ void layernorm(float* out, const float* inp, const float* w, const float* b, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float m = 0.0f;
    for (int c = 0; c < C; c++) m += x[c];
    m = m / C;
    float v = 0.0f;
    for (int c = 0; c < C; c++) { float d = x[c] - m; v += d * d; }
    v = v / (C - 1);  // the sample variance: every output off by about C/2 parts in a million
    float s = 1.0f / sqrtf(v + 1e-5f);
    float* o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = s * (x[c] - m) * w[c] + b[c];
}
