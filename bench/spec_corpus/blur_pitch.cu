// Box blur on a pitched image: cudaMallocPitch gives the row stride in bytes.
#include <cuda_runtime.h>

__global__ void box_blur(const float* in, float* out, int width, int height, size_t pitch) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    const size_t stride = pitch / sizeof(float);
    float acc = 0.f;
    int cnt = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = x + dx, yy = y + dy;
            if (xx >= 0 && yy >= 0 && xx < width && yy < height) { acc += in[yy * stride + xx]; ++cnt; }
        }
    out[y * stride + x] = acc / cnt;
}

int main() {
    int width = 3840, height = 2160;
    float *in, *out;
    size_t pitch;
    cudaMallocPitch(&in, &pitch, width * sizeof(float), height);
    cudaMallocPitch(&out, &pitch, width * sizeof(float), height);
    dim3 block(32, 8);
    dim3 grid((width + 31) / 32, (height + 7) / 8);
    box_blur<<<grid, block>>>(in, out, width, height, pitch);
    return 0;
}
