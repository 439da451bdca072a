// float to bfloat16 conversion, llm.c style with a typedef for the low-precision type.
#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

__global__ void cast_to_bf16(floatX* out, const float* in, long N) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < N) out[i] = __float2bfloat16(in[i]);
}

int main() {
    long N = 50257L * 768L;
    floatX* out;
    float* in;
    cudaMalloc(&out, N * sizeof(floatX));
    cudaMalloc(&in, N * sizeof(float));
    int block_size = 512;
    cast_to_bf16<<<(N + block_size - 1) / block_size, block_size>>>(out, in, N);
    return 0;
}
