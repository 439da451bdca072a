// A tiled matmul over row-major matrices passed by value, its stores made by a device helper
// (what fsr's reading of the body cannot see: the proof finds `C.elements` written), and written
// for whole tiles only (sizes that are no multiple of TILE go out of bounds).
#define TILE 16

struct Mat {
    int cols;
    int rows;
    int pitch;
    float* data;
};

__device__ Mat tile_of(Mat m, int r, int c)
{
    Mat t = m;
    t.rows = TILE;
    t.cols = TILE;
    t.data = m.data + (size_t)r * TILE * m.pitch + c * TILE;
    return t;
}

__device__ void put(Mat m, int r, int c, float v) { m.data[r * m.pitch + c] = v; }

__global__ void tiled_matmul(Mat A, Mat B, Mat C)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    int tr = threadIdx.y, tc = threadIdx.x;
    float acc = 0.f;
    for (int k = 0; k < A.cols / TILE; ++k) {
        Mat a = tile_of(A, blockIdx.y, k), b = tile_of(B, k, blockIdx.x);
        sa[tr][tc] = a.data[tr * a.pitch + tc];
        sb[tr][tc] = b.data[tr * b.pitch + tc];
        __syncthreads();
        for (int e = 0; e < TILE; ++e) acc += sa[tr][e] * sb[e][tc];
        __syncthreads();
    }
    put(tile_of(C, blockIdx.y, blockIdx.x), tr, tc, acc);
}
