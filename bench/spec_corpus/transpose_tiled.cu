// Matrix transpose with shared-memory tiles, sizes from #defines (the classic blog post shape).
#include <cstdio>

#define TILE_DIM 32
#define BLOCK_ROWS 8
#define WIDTH 2048
#define HEIGHT 2048

__global__ void transposeNaive(float *odata, const float *idata, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

__global__ void transposeCoalesced(float *odata, const float *idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main()
{
    const int mem_size = WIDTH * HEIGHT * sizeof(float);
    dim3 dimGrid((WIDTH + TILE_DIM - 1) / TILE_DIM, (HEIGHT + TILE_DIM - 1) / TILE_DIM, 1);
    dim3 dimBlock(TILE_DIM, BLOCK_ROWS, 1);
    float *d_idata, *d_tdata;
    cudaMalloc(&d_idata, mem_size);
    cudaMalloc(&d_tdata, mem_size);
    transposeNaive<<<dimGrid, dimBlock>>>(d_tdata, d_idata, WIDTH, HEIGHT);
    transposeCoalesced<<<dimGrid, dimBlock>>>(d_tdata, d_idata, WIDTH, HEIGHT);
    cudaDeviceSynchronize();
    cudaFree(d_idata);
    cudaFree(d_tdata);
    return 0;
}
