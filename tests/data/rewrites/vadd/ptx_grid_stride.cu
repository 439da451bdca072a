// Read-only loads through inline PTX, a grid-stride loop over a capped grid.
__device__ __forceinline__ float load_nc(const float* p)
{
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}

__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        c[i] = load_nc(a + i) + load_nc(b + i);
}

/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "min(cdiv(n, 256), 1056)"
block = 256
[args]
n = "n"
a = "in[n]"
b = "in[n] uniform(-2, 2)"
c = "out[n]"
*/
