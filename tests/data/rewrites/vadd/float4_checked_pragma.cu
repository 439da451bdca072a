#include <cstdint>

constexpr int kThreads = 128;

/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 512)"
block = 128
[args]
n = "n"
a = "in[n]"
b = "in[n] uniform(-2, 2)"
c = "out[n]"
*/
__global__ void __launch_bounds__(kThreads) vadd(int n, const float* a, const float* b, float* c)
{
    int base = (blockIdx.x * kThreads + threadIdx.x) * 4;
    bool aligned = ((reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b)
                     | reinterpret_cast<std::uintptr_t>(c)) & 15) == 0;
    if (aligned && base + 4 <= n) {
        float4 p = *reinterpret_cast<const float4*>(a + base);
        float4 q = *reinterpret_cast<const float4*>(b + base);
        *reinterpret_cast<float4*>(c + base) = make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
        return;
    }
    for (int k = 0; k < 4; k += 2)
#pragma unroll
        for (int u = 0; u < 2; ++u)
            if (base + k + u < n) c[base + k + u] = a[base + k + u] + b[base + k + u];
}
