// Row layernorm, one thread per row, mean and rstd written out too.
/* @fsr
bench = { N = 8192, C = 768 }
tests = [ { N = 1, C = 1 }, { N = 7, C = 100 }, { N = 260, C = 48 } ]
grid  = "cdiv(N, 256)"
block = 256
rtol  = 1e-4
atol  = 1e-5
[args]
out    = "out[N * C]"
mean   = "out[N]"
rstd   = "out[N]"
inp    = "in[N * C] normal(0, 1)"
weight = "in[C]"
bias   = "in[C]"
N = "N"
C = "C"
*/
__global__ void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                  const float* bias, int N, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float eps = 1e-5f;
    if (idx < N) {
        const float* x = inp + idx * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) {
            m += x[i];
        }
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float xshift = x[i] - m;
            v += xshift * xshift;
        }
        v = v / C;
        float s = 1.0f / sqrtf(v + eps);
        float* out_idx = out + idx * C;
        for (int i = 0; i < C; i++) {
            float n = s * (x[i] - m);
            out_idx[i] = n * weight[i] + bias[i];
        }
        mean[idx] = m;
        rstd[idx] = s;
    }
}
