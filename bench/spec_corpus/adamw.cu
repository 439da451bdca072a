// AdamW update over a flat parameter buffer: several inout buffers and float hyperparameters.
#include <cuda_runtime.h>

__device__ inline float lerp(float start, float end, float weight) { return fma(weight, end, fma(-weight, start, start)); }

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, long num_parameters,
                             float learning_rate, float beta1, float beta2, float beta1_correction,
                             float beta2_correction, float eps, float weight_decay) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_parameters) return;
    float grad = grads[i];
    float mi = lerp(grad, m[i], beta1);
    float vi = lerp(grad * grad, v[i], beta2);
    m[i] = mi;
    v[i] = vi;
    mi /= beta1_correction;
    vi /= beta2_correction;
    params[i] -= learning_rate * (mi / (sqrtf(vi) + eps) + weight_decay * params[i]);
}

int main() {
    long num_parameters = 124475904;
    float *params, *grads, *m, *v;
    cudaMalloc(&params, num_parameters * sizeof(float));
    cudaMalloc(&grads, num_parameters * sizeof(float));
    cudaMalloc(&m, num_parameters * sizeof(float));
    cudaMalloc(&v, num_parameters * sizeof(float));
    int block_size = 512;
    int num_blocks = (num_parameters + block_size - 1) / block_size;
    adamw_kernel<<<num_blocks, block_size>>>(params, grads, m, v, num_parameters, 1e-4f, 0.9f, 0.999f,
                                             0.1f, 0.001f, 1e-8f, 0.0f);
    return 0;
}
