// Integer clamp in place with the bounds as arguments; N from a const global.
#include <cuda_runtime.h>
const int N = 2000000;

__global__ void clamp_values(int* data, int lo, int hi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = min(max(data[i], lo), hi);
}

int main() {
    int* d;
    cudaMalloc(&d, N * sizeof(int));
    clamp_values<<<(N + 255) / 256, 256>>>(d, -100, 100, N);
    return 0;
}
