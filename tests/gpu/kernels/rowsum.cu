// The oracle for the 2D tests: one block per row sums the row.
/* @fsr
bench = { W = 4096, H = 4096 }
tests = [ { W = 64, H = 3 }, { W = 100, H = 5 }, { W = 1001, H = 64 } ]
grid  = "H"
block = 128
rtol  = 1e-4
atol  = 1e-4
[args]
W = "W"
H = "H"
in  = "in[W * H]"
out = "out[H]"
*/
__global__ void rowsum(int W, int H, const float* in, float* out)
{
    __shared__ float s[128];
    int y = blockIdx.x;
    float acc = 0.0f;
    for (int x = threadIdx.x; x < W; x += blockDim.x) acc += in[y * W + x];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = 64; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[y] = s[0];
}
