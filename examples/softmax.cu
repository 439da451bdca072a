// Naive row-wise softmax: one thread per row, three passes over the row.

/* @fsr
bench = { rows = 8192, cols = 1024 }
tests = [ { rows = 1, cols = 1 }, { rows = 7, cols = 1000 }, { rows = 300, cols = 33 } ]
grid  = "cdiv(rows, 256)"
block = 256
rtol  = 1e-4
atol  = 1e-6
[args]
rows = "rows"
cols = "cols"
x = "in[rows * cols] normal(0, 2)"
y = "out[rows * cols]"
[ref]
y = "torch.softmax(x.view(rows, cols).double(), dim=1).float()"
*/
__global__ void softmax(int rows, int cols, const float* x, float* y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* in = x + (size_t)r * cols;
        float* out = y + (size_t)r * cols;
        float m = -INFINITY;
        for (int c = 0; c < cols; ++c) m = fmaxf(m, in[c]);
        float s = 0.0f;
        for (int c = 0; c < cols; ++c) s += expf(in[c] - m);
        for (int c = 0; c < cols; ++c) out[c] = expf(in[c] - m) / s;
    }
}
