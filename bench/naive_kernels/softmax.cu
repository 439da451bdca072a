// Row softmax, one thread per row (as in many tutorials' first version).
/* @fsr
bench = { B = 4096, C = 1024 }
tests = [ { B = 1, C = 1 }, { B = 5, C = 300 }, { B = 300, C = 33 } ]
grid  = "cdiv(B, 256)"
block = 256
rtol  = 1e-4
atol  = 1e-6
[args]
out = "out[B * C]"
inp = "in[B * C] normal(0, 2)"
B = "B"
C = "C"
*/
__global__ void softmax_forward(float* out, const float* inp, int B, int C)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < B) {
        const float* x = inp + row * C;
        float* y = out + row * C;
        float maxval = -INFINITY;
        for (int j = 0; j < C; j++) {
            if (x[j] > maxval) maxval = x[j];
        }
        float sum = 0.0f;
        for (int j = 0; j < C; j++) {
            y[j] = expf(x[j] - maxval);
            sum += y[j];
        }
        for (int j = 0; j < C; j++) {
            y[j] = y[j] / sum;
        }
    }
}
