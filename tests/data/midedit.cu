__global__ void first(int n, float* x)
{
    int i = threadIdx.x;
    if (i < n) x[i] = 1.0f;
}

__global__ void typing_now(float *a, int n

/* @fsr
bench = { n = 4096 }
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
y = "inout[n]"
*/
__global__ void after_the_break(int n, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}
