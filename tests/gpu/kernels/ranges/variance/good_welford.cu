// Welford's one pass: the mean and the squared deviations updated together.
__global__ void variance(float* mean, float* var, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float m = 0.0f, m2 = 0.0f;
    for (int j = 0; j < C; j++) {
        float d = x[j] - m;
        m += d / (j + 1);
        m2 += d * (x[j] - m);
    }
    mean[i] = m;
    var[i] = m2 / C;
}
