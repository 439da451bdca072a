/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
c = [1.5, -2.0, 0.25, 4.0]
x = "in[n]"
y = "out[n]"
*/
__global__ void dot4(int n, float4 c, const float4* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float4 v = x[i]; y[i] = c.x * v.x + c.y * v.y + c.z * v.z + c.w * v.w; }
}
