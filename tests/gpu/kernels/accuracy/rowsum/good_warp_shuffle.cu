/* @fsr
grid  = "cdiv(rows * 32, 256)"
block = 256
*/
__global__ void rowsum(int rows, int cols, const float* x, float* out)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // one warp per row
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* r = x + (size_t)row * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32) s += r[c];  // lanes stride over the row: coalesced
    for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (lane == 0) out[row] = s;
}
