// Naive layer normalisation over the last dimension: one thread per row.

/* @fsr
bench = { rows = 8192, cols = 1024 }
tests = [ { rows = 1, cols = 1 }, { rows = 5, cols = 777 }, { rows = 300, cols = 64 } ]
grid  = "cdiv(rows, 128)"
block = 128
rtol  = 1e-4
atol  = 1e-5
[args]
rows  = "rows"
cols  = "cols"
eps   = 1e-5
x     = "in[rows * cols] normal(1, 3)"
gamma = "in[cols] uniform(0.5, 1.5)"
beta  = "in[cols]"
y     = "out[rows * cols]"
[ref]
y = "torch.nn.functional.layer_norm(x.view(rows, cols).double(), (cols,), gamma.double(), beta.double(), eps).float()"
*/
__global__ void layernorm(int rows, int cols, float eps, const float* x, const float* gamma, const float* beta, float* y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* in = x + (size_t)r * cols;
        float mean = 0.0f;
        for (int c = 0; c < cols; ++c) mean += in[c];
        mean /= cols;
        float var = 0.0f;
        for (int c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
        float inv = rsqrtf(var / cols + eps);
        for (int c = 0; c < cols; ++c) y[(size_t)r * cols + c] = (in[c] - mean) * inv * gamma[c] + beta[c];
    }
}
