// Parameter lists that change with the build: #if inside the signature and at the call.
#include <cuda_runtime.h>
#define USE_BIAS 1

__global__ void linear_act(float* y, const float* x,
#if USE_BIAS
                           const float* bias,
#endif
                           int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
#if USE_BIAS
        v += bias[i];
#endif
        y[i] = v > 0 ? v : 0.01f * v;
    }
}

int main() {
    int n = 4000000;
    float *y, *x, *bias;
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&bias, n * sizeof(float));
    linear_act<<<(n + 255) / 256, 256>>>(y, x, bias, n);
    return 0;
}
