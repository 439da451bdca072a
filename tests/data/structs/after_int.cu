// A struct after an int and before a float: the launch must align it to 8 bytes in the
// parameter buffer (4 bytes of padding after `n`) and place `bias` after its 40 bytes. `seen`
// holds the scalars as the kernel got them: a rewrite writing the spec's values there is right
// only if the launch packed them where the kernel reads them.
struct SaxpyParams {
    int n;
    float alpha;
    const float* __restrict__ x;
    float* y;
    char flag;
    double beta;
};

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
p = { n = "n", alpha = 1.5, x = "in[n]", y = "inout[n]", flag = 1, beta = 0.25 }
bias = -3.0
seen = "out[5]"
*/
__global__ void shifted_saxpy(int n, SaxpyParams p, float bias, float* seen)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        seen[0] = bias; seen[1] = p.alpha; seen[2] = (float)p.beta; seen[3] = (float)(p.n == n); seen[4] = (float)p.flag;
    }
    if (i < n)
        p.y[i] = p.alpha * p.x[i] + (float)p.beta * p.y[i] + (p.flag ? bias : 0.0f);
}
