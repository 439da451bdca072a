// Naive transpose: each thread copies one element, reads coalesced, writes strided.
/* @fsr
bench = { rows = 4096, cols = 4096 }
tests = [ { rows = 1, cols = 1 }, { rows = 37, cols = 70 }, { rows = 513, cols = 129 } ]
grid  = ["cdiv(cols, 16)", "cdiv(rows, 16)"]
block = [16, 16]
[args]
in   = "in[rows * cols]"
out  = "out[rows * cols]"
rows = "rows"
cols = "cols"
*/
__global__ void transpose_naive(const float* in, float* out, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        out[col * rows + row] = in[row * cols + col];
    }
}
