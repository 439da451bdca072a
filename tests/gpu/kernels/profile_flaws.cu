// Two kernels with one known flaw each, for the profiler's GPU tests: a strided (uncoalesced)
// read and a shared-memory tile read down its columns (32-way bank conflicts).
/* @fsr
bench = { n = 4194304 }
tests = [ { n = 1 }, { n = 1000 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
out    = "out[n]"
in     = "in[n]"
n      = "n"
stride = 33
*/
__global__ void gather_strided(float* out, const float* in, int n, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int j = (int)(((long long)i * stride) % n);
        out[i] = in[j] * 2.0f;  // FLAW: uncoalesced
    }
}

/* @fsr
bench = { side = 2048 }
tests = [ { side = 32 }, { side = 64 } ]
grid  = ["side / 32", "side / 32"]
block = [32, 32]
[args]
out  = "out[side * side]"
in   = "in[side * side]"
side = "side"
*/
__global__ void transpose_tiled_conflicts(float* out, const float* in, int side)
{
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * side + x];
    __syncthreads();
    int tx = blockIdx.y * 32 + threadIdx.x;
    int ty = blockIdx.x * 32 + threadIdx.y;
    out[ty * side + tx] = tile[threadIdx.x][threadIdx.y];  // FLAW: bank conflicts
}
