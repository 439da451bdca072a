// Sum of a vector: shared-memory tree per block (interleaved addressing), one atomic per block.
/* @fsr
bench = { n = 16777216 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
smem  = "256 * 4"
rtol  = 1e-3
atol  = 1e-3
[args]
x = "in[n] uniform(0, 1)"
total = "inout[1] fill(0)"
n = "n"
*/
__global__ void reduce_sum(const float* x, float* total, int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, sdata[0]);
}
