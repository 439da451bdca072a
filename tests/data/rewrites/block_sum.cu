// A block reduction: one partial sum per block of 256 (the original, naive shared-memory tree).
#include <cuda_runtime.h>

/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
rtol  = 1e-4
atol  = 1e-4
[args]
n = "n"
x = "in[n]"
partial = "out[cdiv(n, 256)]"
*/
__global__ void block_sum(int n, const float* x, float* partial)
{
    __shared__ float s[256];
    int i = blockIdx.x * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
