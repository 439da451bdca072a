// Naive 5-point Jacobi step on an h x w grid, edges clamped.

/* @fsr
bench = { h = 8192, w = 8192 }
tests = [ { h = 1, w = 1 }, { h = 33, w = 65 }, { h = 1000, w = 3 } ]
grid  = ["cdiv(w, 32)", "cdiv(h, 8)"]
block = [32, 8]
[args]
h   = "h"
w   = "w"
in  = "in[h * w]"
out = "out[h * w]"
*/
__global__ void stencil(int h, int w, const float* in, float* out)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        int i = y * w + x;
        float c = in[i];
        float l = x > 0 ? in[i - 1] : c;
        float r = x < w - 1 ? in[i + 1] : c;
        float u = y > 0 ? in[i - w] : c;
        float d = y < h - 1 ? in[i + w] : c;
        out[i] = 0.2f * (c + l + r + u + d);
    }
}
