// A kernel library file with no host code: one size parameter, so a spec can be inferred.
__global__ void negate(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = -in[i];
}
