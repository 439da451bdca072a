// extern "C" kernels (for loading by name from Python), launched by a small C host function.
#include <cuda_runtime.h>

extern "C" __global__ void vec_mul(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i];
}

extern "C" __global__ void vec_fill(float* c, float value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = value;
}

extern "C" int launch_all(void) {
    int n = 777777;
    float *a, *b, *c;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, n * sizeof(float));
    vec_fill<<<(n + 1023) / 1024, 1024>>>(a, 1.5f, n);
    vec_mul<<<(n + 1023) / 1024, 1024>>>(a, b, c, n);
    return 0;
}
