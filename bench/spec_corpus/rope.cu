// Rotary position embedding applied in place to a [tokens x heads x head_dim] query tensor.
#include <cuda_runtime.h>

__global__ void apply_rope(float* q, const float* cos_cache, const float* sin_cache,
                           int num_tokens, int num_heads, int head_dim) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int half = head_dim / 2;
    int total = num_tokens * num_heads * half;
    if (idx >= total) return;
    int i = idx % half;
    int h = (idx / half) % num_heads;
    int t = idx / (half * num_heads);
    float* v = q + ((size_t)t * num_heads + h) * head_dim;
    float c = cos_cache[t * half + i], s = sin_cache[t * half + i];
    float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = a * s + b * c;
}

int main() {
    int num_tokens = 2048, num_heads = 32, head_dim = 128;
    float *q, *cs, *sn;
    cudaMalloc(&q, sizeof(float) * num_tokens * num_heads * head_dim);
    cudaMalloc(&cs, sizeof(float) * num_tokens * head_dim / 2);
    cudaMalloc(&sn, sizeof(float) * num_tokens * head_dim / 2);
    int total = num_tokens * num_heads * head_dim / 2;
    apply_rope<<<(total + 255) / 256, 256>>>(q, cs, sn, num_tokens, num_heads, head_dim);
    return 0;
}
