// Several kernels of the kinds real files hold. Ünïcödé here: 🚀 shifts UTF-16 columns.
#include <cuda_fp16.h>
#define BLOCK 256

__device__ __forceinline__ float sq(float v) { return v * v; }

__global__ void prototype_only(float* x);  // a declaration: not a kernel definition

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "in[n]"
y = "out[n]"
*/
__global__ void square(int n, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = sq(x[i]);
}

template <typename T, int TILE = 32>
__global__ void __launch_bounds__(1024) transpose(int rows, int cols, const T* in, T* out)
{
    __shared__ T tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void c_linkage(unsigned int n, __half* h, const double* d, long long* idx)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { h[i] = __float2half((float)d[i]); idx[i] = i; }
}

namespace ops {
__global__ void in_namespace(float4* v, int n) { int i = threadIdx.x; if (i < n) v[i].x = 0.f; }
}

int main() { return 0; }
