#define KERNEL __global__
#define KERNEL_BOUNDS(t) __launch_bounds__(t)
#define DEFINE_FILL(name) __global__ void name(float* p) { p[threadIdx.x] = 0; }

// A string mentioning __global__ void fake(int) and a comment with __global__ too.
const char* doc = "__global__ void fake(int n)";

KERNEL void via_macro(int n, float* out)
{
    if (threadIdx.x < n) out[threadIdx.x] = 1.0f;
}

__global__ void __cluster_dims__(2, 1, 1) clustered(int n, const float* a, float* b)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

__global__ void KERNEL_BOUNDS(128) bounded_by_macro(int n, float* z)
{
    if (threadIdx.x < n) z[threadIdx.x] = 2.0f;
}
