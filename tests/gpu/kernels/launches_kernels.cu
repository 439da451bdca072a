// Dynamic parallelism: each thread 0 launches the next level of a recursive fill. The file
// compiles only as relocatable device code and loads only linked with cudadevrt. At most
// 2048 child launches may be pending (the device runtime's default): the bench size keeps to 256.

/* @fsr
bench = { n = 65536 }
tests = [ { n = 256 }, { n = 4096 } ]
grid = "cdiv(n, 256)"
block = 256
edge = false
[args]
y = "out[n]"
x = "in[n]"
alpha = 2.0
depth = 3
*/
__global__ void recursive_scale(float* y, const float* x, float alpha, int depth)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (depth == 0) return;
    if (depth == 1) y[i] = alpha * x[i];
    if (threadIdx.x == 0 && depth > 1)
        recursive_scale<<<1, blockDim.x>>>(y + blockIdx.x * blockDim.x, x + blockIdx.x * blockDim.x, alpha, depth - 1);
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
y = "out[n]"
x = "in[n]"
n = "n"
*/
__global__ void plain_scale(float* y, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.f * x[i];
}
