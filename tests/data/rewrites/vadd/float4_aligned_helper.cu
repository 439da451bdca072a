/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 1024)"
block = 256
[args]
n = "n"
a = "in[n]"
b = "in[n] uniform(-2, 2)"
c = "out[n]"
*/
// Four elements per thread through float4: the buffers come from cudaMalloc (256-byte aligned).
#define VEC 4

__device__ __forceinline__ float4 add4(float4 p, float4 q)
{
    return make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
}

__global__ void vadd(int n, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    int i = v * VEC;
    if (i + VEC <= n) {
        reinterpret_cast<float4*>(c)[v] = add4(reinterpret_cast<const float4*>(a)[v], reinterpret_cast<const float4*>(b)[v]);
    } else {
        for (; i < n; ++i) c[i] = a[i] + b[i];
    }
}
