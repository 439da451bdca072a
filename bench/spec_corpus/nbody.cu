// All-pairs n-body acceleration with float4 positions (w = mass) and a softening term.
#include <cuda_runtime.h>
#define SOFTENING 1e-9f

__global__ void bodyForce(const float4* p, float3* acc, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) {
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        float4 pi = p[i];
        for (int j = 0; j < n; j++) {
            float4 pj = p[j];
            float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
            float distSqr = dx * dx + dy * dy + dz * dz + SOFTENING;
            float invDist = rsqrtf(distSqr);
            float s = pj.w * invDist * invDist * invDist;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        acc[i] = make_float3(ax, ay, az);
    }
}

int main() {
    int nBodies = 30000;
    int bytes = nBodies * sizeof(float4);
    float4* d_p;
    float3* d_acc;
    cudaMalloc(&d_p, bytes);
    cudaMalloc(&d_acc, nBodies * sizeof(float3));
    const int BLOCK_SIZE = 256;
    int nBlocks = (nBodies + BLOCK_SIZE - 1) / BLOCK_SIZE;
    bodyForce<<<nBlocks, BLOCK_SIZE>>>(d_p, d_acc, nBodies);
    return 0;
}
