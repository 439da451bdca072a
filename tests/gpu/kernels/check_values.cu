/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
limit = 2.5
x = "in[n] normal()"
y = "out[n]"
*/
#include <cstdio>
__global__ void check_values(int n, float limit, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 2.0f * x[i];
        if (x[i] > limit) printf("ERROR at index = %d: %f\n", i, x[i]);
    }
}
