// Wrong in memory only, on widths that are not a multiple of 32: each row is read to a pitch of
// 32 elements (volatile: the loads stay) and the extra values are dropped. Inside the buffer
// that reads the next row; on the last row it reads past the end of in.
__global__ void rowsum(int W, int H, const float* in, float* out)
{
    __shared__ float s[128];
    int y = blockIdx.x;
    int pitch = (W + 31) / 32 * 32;
    volatile const float* row = in + (long long)y * W;
    float acc = 0.0f;
    for (int x = threadIdx.x; x < pitch; x += blockDim.x) {
        float v = row[x];
        if (x < W) acc += v;
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = 64; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[y] = s[0];
}
