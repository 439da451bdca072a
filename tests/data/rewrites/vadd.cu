// The oracle for the defence tests: c = a + b.
/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = "in[n]"
b = "in[n] uniform(-2, 2)"
c = "out[n]"
*/
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
