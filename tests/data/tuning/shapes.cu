// Kernels in the shapes real files have, for the tuner's rewrites: a typedef'd element type and
// a #define'd block, a template instantiated through the spec, #pragma unroll before an
// unbraced loop, #if in a parameter list, inline PTX in a helper, a struct above the kernel.
#include <cuda_fp16.h>
#include <stdint.h>

typedef float real_t;
#define THREADS 256
#ifndef USE_BIAS
#define USE_BIAS 1
#endif

struct Affine { float scale; float shift; };

__device__ __forceinline__ unsigned lane_id()
{
    unsigned id;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
    return id;
}

__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }

/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "in[n] uniform(-1, 1)"
n = "n"
*/
__global__ void __launch_bounds__(THREADS) typed_scale(real_t* y, const real_t* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + (real_t)lane_id() * 0.0f;
}

/* @fsr
bench = { rows = 4096, cols = 1024 }
tests = [ { rows = 1, cols = 1 }, { rows = 33, cols = 65 }, { rows = 7, cols = 300 } ]
grid  = "cdiv(rows, 128)"
block = 128
template = "float, 4"
rtol = 1e-4
[args]
out  = "out[rows]"
in   = "in[rows * cols] uniform(0, 1)"
rows = "rows"
cols = "cols"
*/
template <typename T, int VEC>
__global__ void row_sums(T* out, const T* in, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T acc = 0;
    #pragma unroll 4
    for (int c = 0; c < cols; ++c)
        acc += in[(size_t)r * cols + c] * (T)VEC / (T)VEC;
    out[r] = acc;
}

/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
out = "out[n]"
in  = "in[n] uniform(-2, 2)"
scale = 1.5
shift = 0.25
bias = "in[n] uniform(0, 1)"
n   = "n"
*/
__global__ void affine_act(float* out, const float* in, float scale, float shift,
#if USE_BIAS
                           const float* bias,
#endif
                           int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const Affine p = {scale, shift};
        float v = in[i] * p.scale + p.shift;
#if USE_BIAS
        v += bias[i];
#endif
        out[i] = v / (1.0f + fast_exp(-v));
    }
}

/* @fsr
bench = { rows = 1024, cols = 1024 }
tests = [ { rows = 1, cols = 1 }, { rows = 33, cols = 65 }, { rows = 100, cols = 7 } ]
grid  = ["cdiv(cols, 32)", "cdiv(rows, 8)"]
block = [32, 8]
[args]
out  = "out[rows * cols]"
in   = "in[rows * cols] uniform(-1, 1)"
rows = "rows"
cols = "cols"
*/
__global__ void blur_rows(__half* out, const __half* in, int rows, int cols)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= cols || y >= rows) return;
    float s = 0.0f;
    for (int d = -1; d <= 1; ++d) {
        int xx = min(max(x + d, 0), cols - 1);
        s += __half2float(in[y * cols + xx]);
    }
    out[y * cols + x] = __float2half(s / 3.0f);
}
