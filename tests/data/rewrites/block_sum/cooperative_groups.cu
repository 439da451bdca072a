#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void block_sum(int n, const float* x, float* partial)
{
    __shared__ float warps[8];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    int i = blockIdx.x * 256 + threadIdx.x;
    float v = cg::reduce(tile, i < n ? x[i] : 0.0f, cg::plus<float>());
    if (tile.thread_rank() == 0) warps[tile.meta_group_rank()] = v;
    block.sync();
    if (tile.meta_group_rank() == 0) {
        float w = tile.thread_rank() < 8 ? warps[tile.thread_rank()] : 0.0f;
        w = cg::reduce(tile, w, cg::plus<float>());
        if (tile.thread_rank() == 0) partial[blockIdx.x] = w;
    }
}
