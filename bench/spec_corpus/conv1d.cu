// 1D convolution with the mask in constant memory and an apron read guarded at both ends.
#include <cuda_runtime.h>
#define MASK_WIDTH 7
__constant__ float M[MASK_WIDTH];

__global__ void convolution_1D(const float* N, float* P, int Width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= Width) return;
    float Pvalue = 0;
    int start = i - (MASK_WIDTH / 2);
    for (int j = 0; j < MASK_WIDTH; j++) {
        if (start + j >= 0 && start + j < Width) Pvalue += N[start + j] * M[j];
    }
    P[i] = Pvalue;
}

int main() {
    int width = 1 << 22;
    float *d_N, *d_P;
    cudaMalloc(&d_N, width * sizeof(float));
    cudaMalloc(&d_P, width * sizeof(float));
    int threads = 1024;
    int blocks = (width + threads - 1) / threads;
    convolution_1D<<<blocks, threads>>>(d_N, d_P, width);
    return 0;
}
