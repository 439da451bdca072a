// 3x3 box blur with clamped borders, one output pixel per thread.
/* @fsr
bench = { h = 4096, w = 4096 }
tests = [ { h = 1, w = 1 }, { h = 3, w = 50 }, { h = 257, w = 131 } ]
grid  = ["cdiv(w, 16)", "cdiv(h, 16)"]
block = [16, 16]
[args]
img = "in[h * w]"
out = "out[h * w]"
h = "h"
w = "w"
*/
__global__ void blur3x3(float* img, float* out, int h, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float sum = 0.0f;
    for (int dy = -1; dy <= 1; dy++) {
        for (int dx = -1; dx <= 1; dx++) {
            int yy = min(max(y + dy, 0), h - 1);
            int xx = min(max(x + dx, 0), w - 1);
            sum += img[yy * w + xx];
        }
    }
    out[y * w + x] = sum / 9.0f;
}
