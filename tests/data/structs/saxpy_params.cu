// A params struct passed by value, as production kernels take their arguments: pointers and
// scalars of mixed sizes (padding after `flag`, a double after a pointer).
struct SaxpyParams {
    int n;
    float alpha;
    const float* __restrict__ x;
    float* y;
    char flag;
    double beta;
    __device__ float scale() const { return alpha; }
};

/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
p = { n = "n", alpha = 1.5, x = "in[n]", y = "inout[n]", flag = 1, beta = 0.25 }
*/
__global__ void saxpy_params(SaxpyParams p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n)
        p.y[i] = p.scale() * p.x[i] + (float)p.beta * p.y[i] + (p.flag ? 1.0f : 0.0f);
}
