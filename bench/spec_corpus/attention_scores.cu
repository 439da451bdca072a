// Attention scores Q K^T / sqrt(d) for one head: [T x d] inputs, [T x T] output, causal mask.
#include <cuda_runtime.h>
#include <math.h>

__global__ void attn_scores(const float* q, const float* k, float* att, int T, int d) {
    int t1 = blockIdx.y * blockDim.y + threadIdx.y;
    int t2 = blockIdx.x * blockDim.x + threadIdx.x;
    if (t1 >= T || t2 >= T) return;
    if (t2 > t1) { att[t1 * T + t2] = -INFINITY; return; }
    float s = 0.f;
    for (int i = 0; i < d; ++i) s += q[t1 * d + i] * k[t2 * d + i];
    att[t1 * T + t2] = s / sqrtf((float)d);
}

int main() {
    int T = 1024, d = 64;
    float *q, *k, *att;
    cudaMalloc(&q, T * d * sizeof(float));
    cudaMalloc(&k, T * d * sizeof(float));
    cudaMalloc(&att, T * T * sizeof(float));
    dim3 block(32, 8);
    dim3 grid((T + 31) / 32, (T + 7) / 8);
    attn_scores<<<grid, block>>>(q, k, att, T, d);
    return 0;
}
