// GELU (tanh approximation) with a #define'd constant and a launcher taking its sizes.
#include <cuda_runtime.h>
#include <math.h>
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float xi = inp[i];
        float cube = 0.044715f * xi * xi * xi;
        out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
}

void gelu_forward(float* out, const float* inp, int N, const int block_size) {
    const int grid_size = (N + block_size - 1) / block_size;
    gelu_forward_kernel<<<grid_size, block_size>>>(out, inp, N);
}

int main() {
    int B = 8, T = 1024, C = 768;
    float *out, *inp;
    cudaMalloc(&out, B * T * 4 * C * sizeof(float));
    cudaMalloc(&inp, B * T * 4 * C * sizeof(float));
    gelu_forward(out, inp, B * T * 4 * C, 256);
    return 0;
}
