// Warp shuffles, then one shared slot per warp, in 1,024-thread blocks; one atomic per block.
/* @fsr
bench = { n = 16777216 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 1024)"
block = 1024
smem  = "32 * 4"
rtol  = 1e-3
atol  = 1e-3
[args]
x = "in[n] uniform(0, 1)"
total = "inout[1] fill(0)"
n = "n"
*/
__global__ void reduce_sum(const float* __restrict__ x, float* __restrict__ total, int n)
{
    extern __shared__ float partial[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    float v = (i < n) ? x[i] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((tid & 31) == 0) partial[tid >> 5] = v;
    __syncthreads();
    if (tid < 32) {
        v = (tid < (blockDim.x >> 5)) ? partial[tid] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) atomicAdd(total, v);
    }
}
