// a user's header: its inlined code is not the kernel's file
__device__ __forceinline__ float scale_it(float v)
{
    float r = v * 1.5f;
    for (int k = 0; k < 8; ++k) r = r * 0.99f + 0.01f * v;
    return r;
}
