// 2x2 max pooling over NCHW feature maps; output sizes derived from input sizes.
#include <cuda_runtime.h>
#include <cfloat>

__global__ void maxpool2x2(const float* in, float* out, int channels, int height, int width) {
    int ow = width / 2, oh = height / 2;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= channels * oh * ow) return;
    int x = idx % ow, y = (idx / ow) % oh, c = idx / (ow * oh);
    const float* p = in + (size_t)c * height * width;
    float m = -FLT_MAX;
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) m = fmaxf(m, p[(2 * y + dy) * width + 2 * x + dx]);
    out[idx] = m;
}

int main() {
    int N = 1, C = 64, H = 224, W = 224;
    float *in, *out;
    cudaMalloc(&in, N * C * H * W * sizeof(float));
    cudaMalloc(&out, N * C * (H / 2) * (W / 2) * sizeof(float));
    int total = C * (H / 2) * (W / 2);
    maxpool2x2<<<(total + 255) / 256, 256>>>(in, out, C, H, W);
    return 0;
}
