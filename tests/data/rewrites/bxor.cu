// Byte-wise XOR of two byte buffers.
/* @fsr
bench = { n = 67108864 }
tests = [ { n = 1 }, { n = 1000 }, { n = 65537 } ]
grid  = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = "in[n]"
b = "in[n]"
c = "out[n]"
*/
__global__ void bxor(int n, const unsigned char* a, const unsigned char* b, unsigned char* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] ^ b[i];
}
