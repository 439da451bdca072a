// cuRAND generator states as kernel buffers: fsr fills and compares them as their bytes.
#include <curand_kernel.h>

static_assert(sizeof(curandState_t) == 48, "fsr reads curandState_t as 48 bytes");
static_assert(sizeof(curandStatePhilox4_32_10_t) == 64, "fsr reads curandStatePhilox4_32_10_t as 64 bytes");

/* @fsr
bench = { n = 65536 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
state = "inout[n]"
n = "n"
*/
__global__ void seed_states(curandState_t* state, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) curand_init(2019ULL, i, 0, &state[i]);
}

/* @fsr
bench = { n = 1048576 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
out = "out[n]"
state = "inout[n]"
n = "n"
*/
__global__ void draw_uniform(float* out, curandState_t* state, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = curand_uniform(&state[i]);
}
