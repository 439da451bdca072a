/* @fsr
bench = { rows = 4096, cols = 4096 }
tests = [ { rows = 1, cols = 1 }, { rows = 33, cols = 65 }, { rows = 1000, cols = 3 } ]
grid  = ["cdiv(cols, 16)", "cdiv(rows, 16)"]
block = [16, 8]
template = "float, 16"
[args]
rows = "rows"
cols = "cols"
in  = "in[rows * cols]"
out = "out[rows * cols]"
*/
#define BLOCK_ROWS 8

template <typename T, int TILE>
__global__ void transpose(int rows, int cols, const T* __restrict__ in, T* __restrict__ out)
{
    __shared__ T tile[TILE][TILE + 1];  // +1: no bank conflicts on the transposed read
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
