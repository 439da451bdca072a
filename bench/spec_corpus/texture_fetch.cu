// Reads through a texture object: the launch passes a handle, not a pointer.
#include <cuda_runtime.h>

__global__ void sample_tex(cudaTextureObject_t tex, float* out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[y * width + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

int main() {
    int width = 1024, height = 768;
    float* out;
    cudaMalloc(&out, width * height * sizeof(float));
    cudaTextureObject_t tex = 0;
    dim3 block(16, 16);
    dim3 grid((width + 15) / 16, (height + 15) / 16);
    sample_tex<<<grid, block>>>(tex, out, width, height);
    return 0;
}
