// 5-point Jacobi step on a 2D grid with halo rows: dim3 launch, width and height from #defines.
#include <cuda_runtime.h>
#define NX 4096
#define NY 4096
#define BX 32
#define BY 8

__global__ void jacobi(float* __restrict__ out, const float* __restrict__ in, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && y > 0 && x < nx - 1 && y < ny - 1) {
        out[y * nx + x] = 0.25f * (in[y * nx + x - 1] + in[y * nx + x + 1] + in[(y - 1) * nx + x] + in[(y + 1) * nx + x]);
    } else if (x < nx && y < ny) {
        out[y * nx + x] = in[y * nx + x];
    }
}

int main() {
    float *a, *b;
    size_t bytes = sizeof(float) * NX * NY;
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    dim3 block(BX, BY);
    dim3 grid((NX + BX - 1) / BX, (NY + BY - 1) / BY);
    for (int it = 0; it < 100; ++it) {
        jacobi<<<grid, block>>>(b, a, NX, NY);
        float* t = a; a = b; b = t;
    }
    return 0;
}
