/* @fsr
bench = { n = 100000 }
tests = [ { n = 1 }, { n = 1000 }, { n = 5003 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
out = "out[n]"
x   = "in[n]"
n   = "n"
*/
__global__ void tanh_map(float* out, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tanhf(x[i]);
}
