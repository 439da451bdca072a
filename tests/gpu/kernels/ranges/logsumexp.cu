// log(sum(exp(x))) of each row, the max taken out first.
/* @fsr
bench = { N = 512, C = 1000 }
tests = [ { N = 7, C = 100 }, { N = 16, C = 3000 } ]
grid  = "cdiv(N, 128)"
block = 128
[args]
out = "out[N]"
inp = "in[N * C]"
N   = "N"
C   = "C"
*/
__global__ void logsumexp(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float m = -INFINITY;
    for (int j = 0; j < C; j++) m = fmaxf(m, x[j]);
    float sum = 0.0f;
    for (int j = 0; j < C; j++) sum += expf(x[j] - m);
    out[i] = m + logf(sum);
}
