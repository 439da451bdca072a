// Each row's mean and variance, two passes: right however far the mean lies from the spread.
/* @fsr
bench = { N = 512, C = 768 }
tests = [ { N = 7, C = 100 }, { N = 16, C = 2000 } ]
grid  = "cdiv(N, 128)"
block = 128
[args]
mean = "out[N]"
var  = "out[N]"
inp  = "in[N * C]"
N    = "N"
C    = "C"
*/
__global__ void variance(float* mean, float* var, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const float* x = inp + (size_t)i * C;
    float sum = 0.0f;
    for (int j = 0; j < C; j++) sum += x[j];
    float m = sum / C;
    float sq = 0.0f;
    for (int j = 0; j < C; j++) { float d = x[j] - m; sq += d * d; }
    mean[i] = m;
    var[i] = sq / C;
}
