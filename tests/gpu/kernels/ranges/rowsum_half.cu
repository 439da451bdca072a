// Long row sums accumulated in float.
/* @fsr
bench = { N = 64, C = 8192 }
tests = [ { N = 3, C = 100 }, { N = 8, C = 8192 } ]
grid  = "cdiv(N, 32)"
block = 32
[args]
out = "out[N]"
inp = "in[N * C]"
N   = "N"
C   = "C"
*/
__global__ void rowsum_half(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float sum = 0.0f;
    for (int j = 0; j < C; j++) sum += inp[(size_t)i * C + j];
    out[i] = sum;
}
