// One thread per row, the max subtracted: right for any finite logits.
/* @fsr
bench = { N = 256, C = 1024 }
tests = [ { N = 7, C = 100 }, { N = 8, C = 2000 } ]
grid  = "cdiv(N, 64)"
block = 64
[args]
out = "out[N * C]"
inp = "in[N * C]"
N   = "N"
C   = "C"
*/
__global__ void softmax(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float maxval = -INFINITY;
    for (int j = 0; j < C; j++) maxval = fmaxf(maxval, x[j]);
    float sum = 0.0f;
    for (int j = 0; j < C; j++) sum += expf(x[j] - maxval);
    for (int j = 0; j < C; j++) out[(size_t)i * C + j] = expf(x[j] - maxval) / sum;
}
