// One thread walks each row: the naive row sum a reduction rewrite starts from.
/* @fsr
bench = { rows = 2048, cols = 768 }
tests = [ { rows = 64, cols = 768 }, { rows = 8, cols = 50000 }, { rows = 33, cols = 1000 } ]
grid  = "cdiv(rows, 128)"
block = 128
[args]
rows = "rows"
cols = "cols"
x    = "in[rows * cols]"
out  = "out[rows]"
*/
__global__ void rowsum(int rows, int cols, const float* x, float* out)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f;
        for (int c = 0; c < cols; ++c) s += x[(size_t)r * cols + c];
        out[r] = s;
    }
}
