// Mean-squared-error gradient with a scale that depends on the size: 2/N computed on the host.
#include <cuda_runtime.h>

__global__ void mse_backward(float* grad, const float* pred, const float* target, float scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) grad[i] = scale * (pred[i] - target[i]);
}

int main() {
    int batch = 256, features = 1024;
    int n = batch * features;
    float *grad, *pred, *target;
    cudaMalloc(&grad, n * sizeof(float));
    cudaMalloc(&pred, n * sizeof(float));
    cudaMalloc(&target, n * sizeof(float));
    float scale = 2.0f / n;
    mse_backward<<<(n + 255) / 256, 256>>>(grad, pred, target, scale, n);
    return 0;
}
