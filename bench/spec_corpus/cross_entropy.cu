// Cross-entropy loss per token from probabilities and int targets (B, T, V sizes).
#include <cuda_runtime.h>

__global__ void crossentropy_forward_kernel1(float* losses, const float* probs, const int* targets,
                                             int B, int T, int V) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T) {
        int b = i / T;
        int t = i % T;
        const float* probs_bt = probs + b * T * V + t * V;
        int ix = targets[b * T + t];
        losses[b * T + t] = -logf(probs_bt[ix]);
    }
}

int main() {
    int B = 8, T = 1024, V = 50257;
    float *losses, *probs;
    int* targets;
    cudaMalloc(&losses, B * T * sizeof(float));
    cudaMalloc(&probs, (size_t)B * T * V * sizeof(float));
    cudaMalloc(&targets, B * T * sizeof(int));
    int block_size = 128;
    crossentropy_forward_kernel1<<<(B * T + block_size - 1) / block_size, block_size>>>(losses, probs, targets, B, T, V);
    return 0;
}
