// Wrong: a thread whose inout element still holds what it wrote on the previous launch takes
// the work for done and returns. Exact on fresh buffers (every single-launch check, every timed
// run, which draws new inputs); a second launch on the same buffers does nothing.
__device__ float last_written[1 << 20];

__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i < (1 << 20) && y[i] == last_written[i]) return;
    y[i] = a * x[i] + y[i];
    if (i < (1 << 20)) last_written[i] = y[i];
}
