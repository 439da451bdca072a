// Kernels of other element types, each its own oracle; used to check buffers, poisons and scalars.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 777 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
a = 0.5
x = "in[n]"
y = "inout[n] uniform(-1, 1)"
*/
__global__ void haxpy(int n, __half a, const __half* x, __half* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(__hmul(a, x[i]), y[i]);
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 3 }, { n = 4097 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
key = 2654435761
x = "in[n] randint(0, 4294967296)"
out = "out[n]"
*/
__global__ void hash_u32(unsigned int n, unsigned int key, const unsigned int* x, unsigned int* out)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (x[i] ^ key) * 2654435761u;
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 5 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
template = "float, 256"
[args]
n = "n"
x = "in[n]"
y = "out[n]"
*/
template <typename T, int B>
__global__ void scale(int n, const T* x, T* y)
{
    int i = blockIdx.x * B + threadIdx.x;
    if (i < n) y[i] = x[i] * T(3);
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 999 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "in[n]"
y = "out[n]"
*/
__global__ void clamp_inf(int n, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 2.0f ? INFINITY : x[i];
}

/* @fsr
bench = { n = 34359738368 }
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "inout[n]"
*/
__global__ void too_big(long long n, float* x)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 256 }, { n = 4096 } ]
grid = "cdiv(n, 1024)"
block = 256
[args]
n = "n"
x = "in[n]"
y = "out[n]"
*/
__global__ void scale4(int n, const float* x, float* y)
{
    // Only for n a multiple of 4: the tail of any other n is never written.
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 v = *reinterpret_cast<const float4*>(x + i);
        *reinterpret_cast<float4*>(y + i) = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
    }
}
