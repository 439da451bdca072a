// One pass: the running max, the sum rescaled when it grows.
__global__ void logsumexp(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float m = -INFINITY, sum = 0.0f;
    for (int j = 0; j < C; j++) {
        float v = x[j];
        if (v > m) { sum = sum * expf(m - v) + 1.0f; m = v; }
        else sum += expf(v - m);
    }
    out[i] = m + logf(sum);
}
