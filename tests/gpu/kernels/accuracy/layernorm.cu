// One thread per row, as a training program's first version has it.
/* @fsr
bench = { N = 4096, C = 768 }
tests = [ { N = 64, C = 768 }, { N = 5, C = 777 }, { N = 300, C = 64 } ]
grid  = "cdiv(N, 128)"
block = 128
[args]
out  = "out[N * C]"
inp  = "in[N * C]"
w    = "in[C] uniform(0.5, 1.5)"
b    = "in[C]"
N    = "N"
C    = "C"
*/
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
    v = v / C;
    float s = 1.0f / sqrtf(v + 1e-5f);
    float* o = out + (size_t)i * C;
    for (int c = 0; c < C; c++) o[c] = s * (x[c] - m) * w[c] + b[c];
}
