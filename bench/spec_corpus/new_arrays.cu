// Host arrays from new[], device copies sized from them; a kernel updating in place.
#include <cuda_runtime.h>
#include <cstring>

__global__ void axpby(float a, const float* x, float b, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b * y[i];
}

int main() {
    unsigned int n = 3000000;
    float* hx = new float[n];
    float* hy = new float[n];
    float *dx, *dy;
    cudaMalloc((void**)&dx, n * sizeof(float));
    cudaMalloc((void**)&dy, n * sizeof(float));
    cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dy, hy, n * sizeof(float), cudaMemcpyHostToDevice);
    axpby<<<(n + 255) / 256, 256>>>(2.0f, dx, 0.5f, dy, n);
    delete[] hx;
    delete[] hy;
    return 0;
}
