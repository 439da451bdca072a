#include "template_scale.cuh"
#include <cstdio>

int main() {
    long n = 10000000;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    int threads = 256;
    int blocks = (int)((n + threads - 1) / threads);
    scale_kernel<float><<<blocks, threads>>>(y, x, 0.5f, n);
    clamp_kernel<float><<<blocks, threads>>>(y, -1.0f, 1.0f, n);
    cudaDeviceSynchronize();
    return 0;
}
