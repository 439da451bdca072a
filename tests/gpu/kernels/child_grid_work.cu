// The work of a launch hidden in a child grid: `burn` does its work in place; the candidate in
// tests/gpu/test_kernel_clock_gpu.py starts it as a grid of its own from one thread and returns.

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1000 }, { n = 65536 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "in[n]"
n = "n"
rounds = 2000
*/
__global__ void burn(float* y, const float* x, int n, int rounds)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < rounds; ++r) v = v * 0.999f + 0.001f;
    y[i] = v;
}

