#include <cuda_fp16.h>
#include "helper.cuh"
/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "in[n]"
y = "out[n]"
*/
__global__ void probe(int n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __ldg(&x[i]);
        v = scale_it(v);
        __half h = __float2half(v);
        y[i] = __half2float(h) + __expf(v);
    }
}
