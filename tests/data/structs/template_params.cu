// A template params struct, instantiated by the kernel's own template parameter (as
// fast-transformers' Lmha_params<T> and many production kernels' params are).
template <typename T>
struct ScaleParams {
    T* out;
    const T* in;
    int n;
    T scale;
};

/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
template = "float"
[args]
p = { out = "out[n]", in = "in[n]", n = "n", scale = 0.75 }
*/
template <typename T>
__global__ void scale_kernel(ScaleParams<T> p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = p.scale * p.in[i];
}
