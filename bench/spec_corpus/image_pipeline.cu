// An image pipeline: four kernels over the same width x height frame, launched in sequence.
#include <cuda_runtime.h>
#define W 1920
#define H 1080

__global__ void to_float(const unsigned char* in, float* out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[y * width + x] = in[y * width + x] / 255.0f;
}

__global__ void gamma_correct(float* img, float gamma, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) img[y * width + x] = powf(img[y * width + x], gamma);
}

__global__ void sobel(const float* in, float* out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= width - 1 || y >= height - 1) {
        if (x < width && y < height) out[y * width + x] = 0.0f;
        return;
    }
    float gx = in[(y - 1) * width + x + 1] + 2 * in[y * width + x + 1] + in[(y + 1) * width + x + 1]
             - in[(y - 1) * width + x - 1] - 2 * in[y * width + x - 1] - in[(y + 1) * width + x - 1];
    float gy = in[(y + 1) * width + x - 1] + 2 * in[(y + 1) * width + x] + in[(y + 1) * width + x + 1]
             - in[(y - 1) * width + x - 1] - 2 * in[(y - 1) * width + x] - in[(y - 1) * width + x + 1];
    out[y * width + x] = sqrtf(gx * gx + gy * gy);
}

__global__ void to_byte(const float* in, unsigned char* out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[y * width + x] = (unsigned char)fminf(255.0f, fmaxf(0.0f, in[y * width + x] * 255.0f));
}

int main() {
    unsigned char *src, *dst;
    float *a, *b;
    cudaMalloc(&src, W * H);
    cudaMalloc(&dst, W * H);
    cudaMalloc(&a, W * H * sizeof(float));
    cudaMalloc(&b, W * H * sizeof(float));
    dim3 block(16, 16);
    dim3 grid((W + block.x - 1) / block.x, (H + block.y - 1) / block.y);
    to_float<<<grid, block>>>(src, a, W, H);
    gamma_correct<<<grid, block>>>(a, 2.2f, W, H);
    sobel<<<grid, block>>>(a, b, W, H);
    to_byte<<<grid, block>>>(b, dst, W, H);
    return 0;
}
