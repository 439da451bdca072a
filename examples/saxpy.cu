// Single-precision a*x + y: the README's first example.
#include <cuda_runtime.h>

/* @fsr
bench = { n = 16777216 }                            # sizes used for timing
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]  # extra sizes checked for correctness
grid  = "cdiv(n, 256)"
block = 256
[args]
x = "in[n]"
y = "inout[n] normal()"
a = 2.0
n = "n"
*/
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
