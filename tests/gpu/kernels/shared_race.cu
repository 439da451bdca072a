// Race: neighbours exchange through shared memory without __syncthreads; racecheck finds it,
// and the two-run comparison often does.
__global__ void vadd(int n, const float* a, const float* b, float* c)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? a[i] : 0.0f;
    float mine = s[threadIdx.x];
    float other = s[(threadIdx.x + 128) % 256];
    if (i < n) c[i] = mine + b[i] + 0.0f * other;
}
