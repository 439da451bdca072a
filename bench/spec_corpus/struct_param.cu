// A kernel taking a struct of parameters: the launch site cannot say what the struct holds.
#include <cuda_runtime.h>

struct Params {
    const float* x;
    float* y;
    int n;
    float alpha;
};

__global__ void scaled_copy(Params p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.y[i] = p.alpha * p.x[i];
}

__global__ void scaled_copy_flat(const float* x, float* y, int n, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}

int main() {
    int n = 1 << 20;
    Params p;
    cudaMalloc((void**)&p.x, n * sizeof(float));
    cudaMalloc((void**)&p.y, n * sizeof(float));
    p.n = n;
    p.alpha = 3.0f;
    scaled_copy<<<(n + 255) / 256, 256>>>(p);
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    scaled_copy_flat<<<(n + 255) / 256, 256>>>(x, y, n, 3.0f);
    return 0;
}
