// GELU, tanh approximation, elementwise.
#define GELU_SCALING_FACTOR 0.7978845608f

/* @fsr
bench = { N = 16777216 }
tests = [ { N = 1 }, { N = 1000 }, { N = 65537 } ]
grid  = "cdiv(N, 256)"
block = 256
rtol  = 1e-5
atol  = 1e-6
[args]
out = "out[N]"
inp = "in[N] normal(0, 3)"
N = "N"
*/
__global__ void gelu_forward(float* out, const float* inp, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float xi = inp[i];
        float cube = 0.044715f * xi * xi * xi;
        out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
}
