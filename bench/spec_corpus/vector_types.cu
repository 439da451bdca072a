// half2 arithmetic over pairs: the length counts half2 elements.
#include <cuda_fp16.h>

__global__ void hadd2(const __half2* a, const __half2* b, __half2* c, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) c[i] = __hadd2(a[i], b[i]);
}

int main() {
    const int n = 1 << 24;
    __half2 *a, *b, *c;
    cudaMalloc(&a, (n / 2) * sizeof(__half2));
    cudaMalloc(&b, (n / 2) * sizeof(__half2));
    cudaMalloc(&c, (n / 2) * sizeof(__half2));
    hadd2<<<(n / 2 + 255) / 256, 256>>>(a, b, c, n / 2);
    return 0;
}
