// 256-bin byte histogram, one global atomic per input byte.
/* @fsr
bench = { n = 16777216 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "(n + 255) / 256"
block = 256
[args]
data = "in[n] randint(0, 255)"
bins = "inout[256] fill(0)"
n = "n"
*/
__global__ void histogram256(const unsigned char* data, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[data[i]], 1u);
}
