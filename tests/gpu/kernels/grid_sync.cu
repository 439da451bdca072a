// A two-phase sum over one cooperative grid: every block sums its stride into partial[],
// the grid syncs, block 0 sums the partials. Launched plainly, grid.sync() fails.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ float block_sum(float v, float* shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    return shared[0];
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 }, { n = 70000 } ]
grid = 64
block = 256
rtol = 1e-4
atol = 1e-4
[args]
x = "in[n]"
partial = "out[64]"
total = "out[1]"
n = "n"
*/
__global__ void grid_sum(const float* x, float* partial, float* total, int n)
{
    __shared__ float shared[256];
    cg::grid_group grid = cg::this_grid();
    float v = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    float s = block_sum(v, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
    grid.sync();
    if (blockIdx.x == 0) {
        float t = block_sum(threadIdx.x < gridDim.x ? partial[threadIdx.x] : 0.f, shared);
        if (threadIdx.x == 0) total[0] = t;
    }
}
