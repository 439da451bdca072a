// Kernels with one known flaw each, profiled once under ncu with source correlation
// (nvcc -lineinfo) to record the outputs the profile parser reads (bench/record_ncu.sh).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void copy_coalesced(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * 2.0f;
}

__global__ void copy_strided(float* out, const float* in, int n, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int j = (int)(((long long)i * stride) % n);
        out[i] = in[j] * 2.0f;  // neighbouring threads read addresses `stride` floats apart
    }
}

__global__ void transpose_conflicts(float* out, const float* in, int n)
{
    __shared__ float tile[32][32];  // no padding: a column read hits one bank 32 times
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    int tx = blockIdx.y * 32 + threadIdx.x;
    int ty = blockIdx.x * 32 + threadIdx.y;
    out[ty * n + tx] = tile[threadIdx.x][threadIdx.y];
}

__global__ void divergent(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    if (threadIdx.x % 2 == 0) {
        for (int k = 0; k < 64; ++k) v = v * 1.0001f + 0.5f;
    } else {
        for (int k = 0; k < 64; ++k) v = v * 0.9999f - 0.5f;
    }
    out[i] = v;
}

__global__ void local_array(float* out, const float* in, const int* index, int n)
{
    float scratch[64];  // indexed by data: kept in local memory
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int k = 0; k < 64; ++k) scratch[k] = in[i] + k;
    out[i] = scratch[index[i] & 63];
}

int main()
{
    const int n = 1 << 22, side = 2048;
    float *in, *out;
    int* index;
    cudaMalloc(&in, sizeof(float) * n);
    cudaMalloc(&out, sizeof(float) * n);
    cudaMalloc(&index, sizeof(int) * n);
    cudaMemset(in, 0, sizeof(float) * n);
    cudaMemset(index, 0, sizeof(int) * n);
    copy_coalesced<<<n / 256, 256>>>(out, in, n);
    copy_strided<<<n / 256, 256>>>(out, in, n, 33);
    transpose_conflicts<<<dim3(side / 32, side / 32), dim3(32, 32)>>>(out, in, side);
    divergent<<<n / 256, 256>>>(out, in, n);
    local_array<<<n / 256, 256>>>(out, in, index, n);
    cudaError_t e = cudaDeviceSynchronize();
    printf("profile_kernels: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
