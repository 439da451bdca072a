// 64-bin histogram into an accumulator that starts at zero: global atomics.
/* @fsr
bench = { n = 16777216 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
n = "n"
keys = "in[n] randint(0, 64)"
bins = "inout[64] zeros()"
*/
__global__ void histogram(int n, const int* keys, unsigned int* bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[keys[i]], 1u);
}
