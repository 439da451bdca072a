// Naive out-of-place transpose of a rows x cols float matrix: coalesced reads, strided writes.

/* @fsr
bench = { rows = 8192, cols = 8192 }
tests = [ { rows = 1, cols = 1 }, { rows = 33, cols = 65 }, { rows = 1000, cols = 3 } ]
grid  = ["cdiv(cols, 32)", "cdiv(rows, 8)"]
block = [32, 8]
[args]
rows = "rows"
cols = "cols"
in  = "in[rows * cols]"
out = "out[rows * cols]"
*/
__global__ void transpose(int rows, int cols, const float* in, float* out)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols)
        out[c * rows + r] = in[r * cols + c];
}
