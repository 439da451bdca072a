// A header of templated elementwise kernels, launched from scale_main.cu.
#pragma once

template <typename scalar_t>
__global__ void scale_kernel(scalar_t* __restrict__ y, const scalar_t* __restrict__ x, scalar_t alpha, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i];
}

template <typename scalar_t>
__global__ void clamp_kernel(scalar_t* y, scalar_t lo, scalar_t hi, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] < lo ? lo : (y[i] > hi ? hi : y[i]);
}
