// RMSNorm with one block per row and a shared-memory reduction; weight per column.
#include <cuda_runtime.h>
#define THREADS 256

__global__ void rmsnorm(float* out, const float* x, const float* weight, int rows, int dim, float eps) {
    __shared__ float red[THREADS];
    int row = blockIdx.x;
    const float* xr = x + (size_t)row * dim;
    float ss = 0.f;
    for (int i = threadIdx.x; i < dim; i += THREADS) ss += xr[i] * xr[i];
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float scale = rsqrtf(red[0] / dim + eps);
    for (int i = threadIdx.x; i < dim; i += THREADS) out[(size_t)row * dim + i] = xr[i] * scale * weight[i];
}

int main() {
    int rows = 4096, dim = 4096;
    float *out, *x, *w;
    cudaMalloc(&out, sizeof(float) * rows * dim);
    cudaMalloc(&x, sizeof(float) * rows * dim);
    cudaMalloc(&w, sizeof(float) * dim);
    rmsnorm<<<rows, THREADS>>>(out, x, w, rows, dim, 1e-6f);
    return 0;
}
