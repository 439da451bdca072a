// One step of a bitonic sort network over unsigned keys (j, k passed per step).
#include <cuda_runtime.h>
#define NUM_VALS 1048576
#define THREADS 512

__global__ void bitonic_sort_step(unsigned int* dev_values, int j, int k) {
    unsigned int i = threadIdx.x + blockDim.x * blockIdx.x;
    unsigned int ixj = i ^ j;
    if (ixj > i) {
        if ((i & k) == 0 ? dev_values[i] > dev_values[ixj] : dev_values[i] < dev_values[ixj]) {
            unsigned int t = dev_values[i];
            dev_values[i] = dev_values[ixj];
            dev_values[ixj] = t;
        }
    }
}

int main() {
    unsigned int* dev_values;
    size_t size = NUM_VALS * sizeof(unsigned int);
    cudaMalloc((void**)&dev_values, size);
    dim3 blocks(NUM_VALS / THREADS, 1);
    dim3 threads(THREADS, 1);
    for (int k = 2; k <= NUM_VALS; k <<= 1)
        for (int j = k >> 1; j > 0; j = j >> 1)
            bitonic_sort_step<<<blocks, threads>>>(dev_values, j, k);
    return 0;
}
