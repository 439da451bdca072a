// Launch through a project macro that wraps <<<>>> (seen in larger code bases).
#include <cuda_runtime.h>
#define LAUNCH_1D(kernel, n, ...) kernel<<<((n) + 255) / 256, 256>>>(__VA_ARGS__)

__global__ void fill_iota(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i;
}

__global__ void square_ints(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}

int main() {
    int n = 1 << 20;
    int *a, *b;
    cudaMalloc(&a, n * sizeof(int));
    cudaMalloc(&b, n * sizeof(int));
    LAUNCH_1D(fill_iota, n, a, n);
    square_ints<<<(n + 255) / 256, 256>>>(a, b, n);
    return 0;
}
