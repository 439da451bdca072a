// Four elements per thread through float4 when both pointers are 16-byte aligned; a scalar tail.
/* @fsr
bench = { n = 16777216 }                            # sizes used for timing
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]  # extra sizes checked for correctness
grid  = "cdiv(n, 1024)"
block = 256
[args]
x = "in[n]"
y = "inout[n] normal()"
a = 2.0
n = "n"
*/
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    bool aligned = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;
    if (aligned && base + 3 < n) {
        float4 xv = *reinterpret_cast<const float4*>(x + base);
        float4 yv = *reinterpret_cast<const float4*>(y + base);
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        *reinterpret_cast<float4*>(y + base) = yv;
        return;
    }
    for (int k = base; k < base + 4 && k < n; ++k) y[k] = a * x[k] + y[k];
}
