// thrust device vectors handed to a raw kernel through raw_pointer_cast; an index array.
#include <thrust/device_vector.h>
#include <thrust/sequence.h>

__global__ void gather(float* dst, const float* src, const int* idx, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[idx[i]];
}

int main() {
    const int n = 1 << 20;
    const int table = 4096;
    thrust::device_vector<float> d_src(table);
    thrust::device_vector<int> d_idx(n);
    thrust::device_vector<float> d_dst(n);
    gather<<<(n + 127) / 128, 128>>>(thrust::raw_pointer_cast(d_dst.data()),
                                     thrust::raw_pointer_cast(d_src.data()),
                                     thrust::raw_pointer_cast(d_idx.data()), n);
    return 0;
}
