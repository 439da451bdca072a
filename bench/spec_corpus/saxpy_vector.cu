// std::vector on the host, raw device pointers, a launch through a helper macro for the grid.
#include <vector>
#include <cstdio>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main()
{
    const int n = 1 << 22;
    std::vector<float> hx(n, 1.0f), hy(n, 2.0f);
    float *dx, *dy;
    cudaMalloc(&dx, hx.size() * sizeof(float));
    cudaMalloc(&dy, hy.size() * sizeof(float));
    cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dy, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    const int block = 512;
    saxpy<<<CEIL_DIV(n, block), block>>>(n, 2.5f, dx, dy);
    cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    printf("%f\n", hy[0]);
    return 0;
}
