// The same arithmetic in 1,024-thread blocks.
/* @fsr
bench = { n = 16777216 }                            # sizes used for timing
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]  # extra sizes checked for correctness
grid  = "cdiv(n, 1024)"
block = 1024
[args]
x = "in[n]"
y = "inout[n] normal()"
a = 2.0
n = "n"
*/
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
