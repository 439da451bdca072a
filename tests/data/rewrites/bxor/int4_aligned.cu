/* @fsr
bench = { n = 67108864 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 4096)"
block = 256
[args]
n = "n"
a = "in[n]"
b = "in[n]"
c = "out[n]"
*/
// 16 bytes per thread through int4 (cudaMalloc's alignment); the last partial vector bytewise.
__global__ void bxor(int n, const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                     unsigned char* __restrict__ c)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int i = v * 16;
    if (i + 16 <= n) {
        int4 p = reinterpret_cast<const int4*>(a)[v];
        int4 q = reinterpret_cast<const int4*>(b)[v];
        reinterpret_cast<int4*>(c)[v] = make_int4(p.x ^ q.x, p.y ^ q.y, p.z ^ q.z, p.w ^ q.w);
    } else {
        for (; i < n; ++i) c[i] = a[i] ^ b[i];
    }
}
