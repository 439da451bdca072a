// Kernels inside a namespace with a using-declared element type.
#include <cuda_runtime.h>

namespace ops {
using real = float;

__global__ void square(real* y, const real* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}
}  // namespace ops

int main() {
    const int n = 1 << 21;
    ops::real *x, *y;
    cudaMalloc(&x, n * sizeof(ops::real));
    cudaMalloc(&y, n * sizeof(ops::real));
    ops::square<<<n / 256 + 1, 256>>>(y, x, n);
    return 0;
}
