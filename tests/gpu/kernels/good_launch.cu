// Correct, with its own launch: 512 threads, each handling two elements.
/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 1024)"
block = 512
[args]
n = "n"
a = "in[n]"
b = "in[n] uniform(-2, 2)"
c = "out[n]"
*/
__global__ void vadd(int n, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 2;
    if (i < n) c[i] = a[i] + b[i];
    if (i + 1 < n) c[i + 1] = a[i + 1] + b[i + 1];
}
