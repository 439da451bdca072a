// RGBA to grayscale on an image: uchar4 pixels, width and height, 2D blocks of 16 x 16.
#include <cuda_runtime.h>

__global__ void rgba_to_greyscale(const uchar4* const rgbaImage, unsigned char* const greyImage,
                                  int numRows, int numCols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < numRows && c < numCols) {
        uchar4 p = rgbaImage[r * numCols + c];
        greyImage[r * numCols + c] = (unsigned char)(.299f * p.x + .587f * p.y + .114f * p.z);
    }
}

int main() {
    const int numRows = 1080, numCols = 1920;
    const size_t numPixels = numRows * numCols;
    uchar4* d_rgbaImage;
    unsigned char* d_greyImage;
    cudaMalloc(&d_rgbaImage, sizeof(uchar4) * numPixels);
    cudaMalloc(&d_greyImage, sizeof(unsigned char) * numPixels);
    const dim3 blockSize(16, 16, 1);
    const dim3 gridSize((numCols + 15) / 16, (numRows + 15) / 16, 1);
    rgba_to_greyscale<<<gridSize, blockSize>>>(d_rgbaImage, d_greyImage, numRows, numCols);
    return 0;
}
