#include <cstdio>
__global__ void check_values(int n, float limit, const float* __restrict__ x, float* __restrict__ y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 2.0f * v;
        if (v > limit) printf("ERROR at index = %d: %f\n", i, v);
    }
}
