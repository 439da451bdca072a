// A templated transpose, instantiated through the spec.
/* @fsr
bench = { rows = 4096, cols = 4096 }
tests = [ { rows = 1, cols = 1 }, { rows = 33, cols = 65 }, { rows = 1000, cols = 3 } ]
grid  = ["cdiv(cols, 16)", "cdiv(rows, 16)"]
block = [16, 16]
template = "float, 16"
[args]
rows = "rows"
cols = "cols"
in  = "in[rows * cols]"
out = "out[rows * cols]"
*/
template <typename T, int TILE>
__global__ void transpose(int rows, int cols, const T* in, T* out)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}
