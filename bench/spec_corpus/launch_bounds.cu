// A kernel with __launch_bounds__ and a block size constant shared with the host.
#include <cuda_runtime.h>
constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads, 4) lerp_kernel(const float* a, const float* b, float* out, float t, int n) {
    int i = blockIdx.x * kThreads + threadIdx.x;
    if (i < n) out[i] = a[i] + t * (b[i] - a[i]);
}

int main() {
    int n = 9999991;
    float *a, *b, *out;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    lerp_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(a, b, out, 0.25f, n);
    return 0;
}
