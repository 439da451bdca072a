// Kernels and the host code that launches them, in the shapes samples and training code use.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <torch/torch.h>

#define BLOCK 256
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))
typedef float real;
using floatX = float;

__global__ void saxpy(int n, real a, const real* x, real* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void transpose(float* out, const float* in, int width, int height)
{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    if (x < height && y < width) out[y * height + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void histogram(const int* keys, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[keys[i]], 1u);
}

__global__ void relu(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

__global__ void gather(float* dst, const float* src, const int* idx, int k)
{
    extern __shared__ float stage[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = i < k ? src[idx[i]] : 0.0f;
    __syncthreads();
    if (i < k) dst[i] = stage[threadIdx.x];
}

template <typename T, int VEC>
__global__ void scale(T* v, T factor, int total)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    for (int j = 0; j < VEC; ++j)
        if (i + j < total) v[i + j] *= factor;
}

__global__ void fill(float* p, float value, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = value;
}

__global__ void unlaunched(float* p) { p[threadIdx.x] = 0.0f; }

__global__ void computed(float* p, int n) { if (threadIdx.x < n) p[threadIdx.x] = 1.0f; }

int compute_blocks(int n);

void launch_relu(float* out, const float* in, int n, cudaStream_t stream)
{
    relu<<<CEIL_DIV(n, 256), 256, 0, stream>>>(out, in, n);
}

int main()
{
    int N = 1 << 20;
    size_t bytes = N * sizeof(real);
    real *d_x, *d_y;
    cudaMalloc(&d_x, bytes);
    cudaMalloc((void**)&d_y, N * sizeof(real));
    int threads = BLOCK;
    int blocks = (N + threads - 1) / threads;
    saxpy<<<blocks, threads>>>(N, 2.0f, d_x, d_y);

    const int W = 2048, H = 1024;
    float *d_in, *d_out;
    cudaMalloc(&d_in, W * H * sizeof(float));
    cudaMalloc(&d_out, W * H * sizeof(float));
    dim3 block(32, 32);
    dim3 grid((W + 31) / 32, (H + 31) / 32);
    transpose<<<grid, block>>>(d_out, d_in, W, H);

    int *d_keys;
    unsigned int *d_bins;
    cudaMalloc(&d_keys, N * sizeof(int));
    cudaMalloc(&d_bins, 64 * sizeof(unsigned int));
    cudaMemset(d_bins, 0, 64 * sizeof(unsigned int));
    histogram<<<blocks, threads>>>(d_keys, d_bins, N);

    int M = 4096;
    int K = 1000;
    thrust::device_vector<float> d_src(M);
    std::vector<int> h_idx(K);
    int* d_idx;
    cudaMalloc(&d_idx, K * sizeof(int));
    float* d_dst = new float[K];
    gather<<<(K + 127) / 128, 128, 128 * sizeof(float)>>>(d_dst + 4, thrust::raw_pointer_cast(d_src.data()), d_idx, K - 4);

    int B = 8, T = 64, C = 96;
    auto v = torch::empty({B, T, C}, torch::kFloat32);
    scale<floatX, 4><<<CEIL_DIV(B * T * C, 128 * 4), 128>>>(v.data_ptr<float>(), 0.5f, B * T * C);

    float* d_p;
    int n = 100000;
    cudaMalloc(&d_p, n * sizeof(float));
    fill<<<CEIL_DIV(n, 128), 128>>>(d_p, 1.0f, n);
    fill<<<CEIL_DIV(n, 128), 128>>>(d_p, 1.0f, n);
    fill<<<CEIL_DIV(n, 256), 256>>>(d_p, 2.0f, n);
    computed<<<compute_blocks(n), 128>>>(d_p, n);
    return 0;
}
