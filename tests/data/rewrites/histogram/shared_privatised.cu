/* @fsr
bench = { n = 16777216 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "min(cdiv(n, 256), 528)"
block = 256
smem  = 256
[args]
n = "n"
keys = "in[n] randint(0, 64)"
bins = "inout[64] zeros()"
*/
#define BINS 64

__global__ void histogram(int n, const int* __restrict__ keys, unsigned int* __restrict__ bins)
{
    extern __shared__ unsigned int local[];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[keys[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}
