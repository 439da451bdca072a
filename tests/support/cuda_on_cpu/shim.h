// CUDA device code as C++ on the CPU, for tests on machines without a GPU (tests/cuda_on_cpu).
//
// Blocks run one after another, so `__shared__` variables (made `static` here, poisoned before
// each block) belong to the block running. Within a block, where the code has a barrier, shuffle or vote, each CUDA thread
// is a fiber (ucontext) that runs until it waits at one; a barrier opens when every thread of
// its block (or warp) that has not returned waits there, as on the GPU. One that can never open
// is a deadlock: reported, not waited on. Atomics are plain (one OS thread runs the block).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include <ucontext.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ __attribute__((section("fsr_shared"))) static  // poisoned before each block: see launch
#define __constant__
#define __align__(n) __attribute__((aligned(n)))  // as CUDA has it: after `__shared__` (static) too

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

#define FSR_VECTOR2(T, N) struct alignas(2 * sizeof(T)) N { T x, y; }; \
  inline N make_##N(T a, T b) { return N{a, b}; }
#define FSR_VECTOR4(T, N) struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) N { T x, y, z, w; }; \
  inline N make_##N(T a, T b, T c, T d) { return N{a, b, c, d}; }
FSR_VECTOR2(float, float2)
FSR_VECTOR4(float, float4)
FSR_VECTOR2(int, int2)
FSR_VECTOR4(int, int4)
FSR_VECTOR2(unsigned, uint2)
FSR_VECTOR4(unsigned, uint4)
FSR_VECTOR2(double, double2)

// The runtime API's common names, so that a file's host code is C++ up to its launches
// (`<<<...>>>`), whose functions the evaluator then leaves out as it does where nvcc cannot build
// a file's host code. None of them is ever called.
typedef int cudaError_t;
constexpr cudaError_t cudaSuccess = 0;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
                      cudaMemcpyDefault };
typedef struct fsr_event* cudaEvent_t;
typedef struct fsr_stream* cudaStream_t;
inline const char* cudaGetErrorString(cudaError_t) { return ""; }
inline cudaError_t cudaGetLastError() { return 0; }
inline cudaError_t cudaPeekAtLastError() { return 0; }
inline cudaError_t cudaDeviceSynchronize() { return 0; }
inline cudaError_t cudaDeviceReset() { return 0; }
inline cudaError_t cudaSetDevice(int) { return 0; }
template <class T> cudaError_t cudaMalloc(T**, size_t) { return 0; }
template <class T> cudaError_t cudaMallocManaged(T**, size_t, unsigned = 1) { return 0; }
template <class T> cudaError_t cudaMallocHost(T**, size_t) { return 0; }
inline cudaError_t cudaFree(void*) { return 0; }
inline cudaError_t cudaFreeHost(void*) { return 0; }
inline cudaError_t cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind) { return 0; }
template <class T> cudaError_t cudaMemcpyToSymbol(const T&, const void*, size_t, size_t = 0,
                                                  cudaMemcpyKind = cudaMemcpyHostToDevice) { return 0; }
inline cudaError_t cudaMemset(void*, int, size_t) { return 0; }
inline cudaError_t cudaEventCreate(cudaEvent_t*) { return 0; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = nullptr) { return 0; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventElapsedTime(float*, cudaEvent_t, cudaEvent_t) { return 0; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return 0; }

// A misaligned access faults on the GPU (a float4 load 4 bytes past a 16-byte boundary, say),
// where x86 just loads: the kernel is built with -fsanitize=alignment, and the sanitizer's hook
// is this one, which marks the launch as failed instead of printing.
namespace fsr_emu {
inline bool misaligned = false;
}
extern "C" __attribute__((used)) void __ubsan_handle_type_mismatch_v1(void*, void*) { fsr_emu::misaligned = true; }

namespace fsr_emu {

// A block's threads are fibers on one OS thread: each runs until it waits at a barrier (the
// block's, or its warp's for a shuffle or vote) or returns; a barrier opens when every thread
// of its block (or warp) that has not returned waits at it, as on the GPU, where a thread that
// has exited no longer counts.
enum State { RUNNABLE, AT_BLOCK, AT_WARP, DONE };

struct Fiber {
  ucontext_t context;
  State state = RUNNABLE;
  uint3 tid;
  int rank;
};

inline uint3 thread_idx;
inline uint3 block_idx;
inline dim3 block_dim, grid_dim;
inline unsigned char* dynamic_smem;
inline int lane;
inline Fiber* current;
inline ucontext_t scheduler;
inline std::vector<Fiber>* fibers;
inline uint64_t slot[1024];  // one a thread of the block: what a shuffle or vote exchanges
inline void (*kernel_body)(void*);
inline void* kernel_args;

inline void wait(State at) {
  current->state = at;
  swapcontext(&current->context, &scheduler);
}

inline int warp_size() {
  int threads = int(fibers->size()), first = current->rank & ~31;
  return std::min(32, threads - first);
}

// A shuffle that reads a lane which has returned, or one past a partial warp's last, reads
// what no thread gave it (undefined on the GPU): the launch fails.
inline bool lost_lane = false;

template <class T> T exchange(T v, int source, bool own) {
  int first = current->rank & ~31;
  std::memcpy(&slot[current->rank], &v, sizeof(T));
  wait(AT_WARP);
  T out = v;
  if (!own && (source < 0 || source >= warp_size() || (*fibers)[first + source].state == DONE)) lost_lane = true;
  else if (!own) std::memcpy(&out, &slot[first + source], sizeof(T));
  wait(AT_WARP);
  return out;
}

}  // namespace fsr_emu

#define threadIdx (fsr_emu::thread_idx)
#define blockIdx (fsr_emu::block_idx)
#define blockDim (fsr_emu::block_dim)
#define gridDim (fsr_emu::grid_dim)
constexpr int warpSize = 32;

inline void __syncthreads() { fsr_emu::wait(fsr_emu::AT_BLOCK); }
inline void __syncwarp(unsigned = 0xffffffffu) { fsr_emu::wait(fsr_emu::AT_WARP); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned __activemask() { return 0xffffffffu; }

template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
  int seg = fsr_emu::lane & ~(width - 1);
  return fsr_emu::exchange(v, seg + ((src % width) + width) % width, false);
}
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  int seg = fsr_emu::lane & ~(width - 1), src = fsr_emu::lane + int(delta);
  return fsr_emu::exchange(v, src, src >= seg + width);
}
template <class T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  int seg = fsr_emu::lane & ~(width - 1), src = fsr_emu::lane - int(delta);
  return fsr_emu::exchange(v, src, src < seg);
}
template <class T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  int seg = fsr_emu::lane & ~(width - 1), src = fsr_emu::lane ^ mask;
  return fsr_emu::exchange(v, src, src >= seg + width);  // a later group: its own value, as CUDA gives
}
inline unsigned __ballot_sync(unsigned, int predicate) {
  int first = fsr_emu::current->rank & ~31;
  fsr_emu::slot[fsr_emu::current->rank] = predicate != 0;
  fsr_emu::wait(fsr_emu::AT_WARP);
  unsigned bits = 0;
  for (int i = 0; i < fsr_emu::warp_size(); ++i) bits |= unsigned(fsr_emu::slot[first + i] != 0) << i;
  fsr_emu::wait(fsr_emu::AT_WARP);
  return bits;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) {
  int n = fsr_emu::warp_size();
  return __ballot_sync(m, p) == (n == 32 ? 0xffffffffu : (1u << n) - 1);
}

template <class T> T atomicAdd(T* address, T value) { return std::atomic_ref<T>(*address).fetch_add(value); }
template <class T> T atomicSub(T* address, T value) { return std::atomic_ref<T>(*address).fetch_sub(value); }
template <class T> T atomicExch(T* address, T value) { return std::atomic_ref<T>(*address).exchange(value); }
template <class T> T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;
}
template <class T> T atomicMax(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (old < value && !a.compare_exchange_weak(old, value)) {}
  return old;
}
template <class T> T atomicMin(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (value < old && !a.compare_exchange_weak(old, value)) {}
  return old;
}

template <class A, class B> inline auto min(A a, B b) -> std::common_type_t<A, B> { return b < a ? b : a; }
template <class A, class B> inline auto max(A a, B b) -> std::common_type_t<A, B> { return a < b ? b : a; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline int __float_as_int(float x) { int i; std::memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int i) { float x; std::memcpy(&x, &i, 4); return x; }
inline unsigned __float_as_uint(float x) { unsigned i; std::memcpy(&i, &x, 4); return i; }
inline float __uint_as_float(unsigned i) { float x; std::memcpy(&x, &i, 4); return x; }
template <class T> T __ldg(const T* p) { return *p; }

// Half precision (cuda_fp16.h, an empty header in include/ here): each operation rounds to
// half, as on the GPU, through the compiler's own _Float16.
typedef _Float16 __half;
inline __half __float2half(float x) { return static_cast<__half>(x); }
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __hadd(__half a, __half b) { return static_cast<__half>(a + b); }
inline __half __hmul(__half a, __half b) { return static_cast<__half>(a * b); }

// bfloat16 (cuda_bf16.h, empty in include/ too): the top 16 bits of a float, rounded to nearest
// even as __float2bfloat16 rounds; arithmetic goes through float, as CUDA's host code does.
struct __nv_bfloat16 {
    unsigned short bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float x) {
        unsigned u;
        std::memcpy(&u, &x, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) { bits = static_cast<unsigned short>((u >> 16) | 0x40u); return; }
        u += 0x7fffu + ((u >> 16) & 1u);
        bits = static_cast<unsigned short>(u >> 16);
    }
    operator float() const { unsigned u = static_cast<unsigned>(bits) << 16; float x; std::memcpy(&x, &u, 4); return x; }
};
inline __nv_bfloat16 __float2bfloat16(float x) { return __nv_bfloat16(x); }
inline float __bfloat162float(__nv_bfloat16 h) { return static_cast<float>(h); }

namespace fsr_emu {

// Shared memory holds garbage when a block starts (what an earlier block left, say): a kernel
// that reads it before writing must not find zeros. The `__shared__` variables are in their own
// section, whose bounds the linker gives.
extern "C" __attribute__((weak)) char __start_fsr_shared[], __stop_fsr_shared[];

inline void poison_shared(unsigned dynamic_bytes) {
  if (__start_fsr_shared != nullptr) std::memset(__start_fsr_shared, 0xcd, __stop_fsr_shared - __start_fsr_shared);
  std::memset(dynamic_smem, 0xcd, dynamic_bytes);
}

inline void start() {
  kernel_body(kernel_args);
  current->state = DONE;  // uc_link returns to the scheduler
}

inline void enter(Fiber& f) {
  current = &f;
  thread_idx = f.tid;
  lane = f.rank % 32;
  swapcontext(&scheduler, &f.context);
}

// Opens the barriers every waiting thread has reached: a warp's when all its threads that have
// not returned wait at it, the block's when all of them do. False when none opens (deadlock).
inline bool open_barriers(std::vector<Fiber>& block) {
  bool opened = false, all_at_block = true;
  for (size_t first = 0; first < block.size(); first += 32) {
    size_t end = std::min(block.size(), first + 32);
    bool waiting = false, all = true;
    for (size_t i = first; i < end; ++i) {
      waiting |= block[i].state == AT_WARP;
      all &= block[i].state == AT_WARP || block[i].state == DONE;
    }
    if (waiting && all) {
      for (size_t i = first; i < end; ++i)
        if (block[i].state == AT_WARP) block[i].state = RUNNABLE;
      opened = true;
    }
  }
  if (opened) return true;
  for (auto& f : block) all_at_block &= f.state == AT_BLOCK || f.state == DONE;
  if (!all_at_block) return false;
  for (auto& f : block)
    if (f.state == AT_BLOCK) { f.state = RUNNABLE; opened = true; }
  return opened;
}

// Runs `body` (one CUDA thread's call of the kernel) for every thread of the grid, block after
// block. Returns 0, 1 when a block deadlocked (a barrier, shuffle or vote that not every
// thread reaches), 2 when an access was misaligned for its type, 3 when a shuffle read a lost lane. Without `together` (code with no barrier, shuffle or vote, where the order of
// threads cannot matter) threads simply run one after another.
inline int launch(const unsigned grid[3], const unsigned block[3], unsigned smem, bool together,
                  void (*body)(void*), void* args) {
  grid_dim = dim3(grid[0], grid[1], grid[2]);
  block_dim = dim3(block[0], block[1], block[2]);
  std::vector<unsigned char> dynamic(smem + 16, 0xcd);
  dynamic_smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(dynamic.data()) + 15) & ~uintptr_t(15));
  kernel_body = body;
  kernel_args = args;
  misaligned = false;
  lost_lane = false;
  const int threads = int(block[0] * block[1] * block[2]);
  constexpr size_t STACK = 1 << 16;
  std::vector<char> stacks(together ? STACK * threads : 0);
  std::vector<Fiber> block_fibers(threads);
  fibers = &block_fibers;
  for (int t = 0; t < threads; ++t) {
    block_fibers[t].tid = uint3{unsigned(t % block[0]), unsigned(t / block[0] % block[1]), unsigned(t / (block[0] * block[1]))};
    block_fibers[t].rank = t;
  }
  for (unsigned bz = 0; bz < grid[2]; ++bz)
    for (unsigned by = 0; by < grid[1]; ++by)
      for (unsigned bx = 0; bx < grid[0]; ++bx) {
        block_idx = uint3{bx, by, bz};
        poison_shared(smem);
        if (!together) {
          for (auto& f : block_fibers) {
            current = &f;
            thread_idx = f.tid;
            lane = f.rank % 32;
            body(args);
          }
          continue;
        }
        for (int t = 0; t < threads; ++t) {
          Fiber& f = block_fibers[t];
          f.state = RUNNABLE;
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = stacks.data() + STACK * t;
          f.context.uc_stack.ss_size = STACK;
          f.context.uc_link = &scheduler;
          makecontext(&f.context, start, 0);
        }
        for (;;) {
          for (auto& f : block_fibers)
            if (f.state == RUNNABLE) enter(f);
          bool done = std::all_of(block_fibers.begin(), block_fibers.end(), [](const Fiber& f) { return f.state == DONE; });
          if (done) break;
          if (!open_barriers(block_fibers)) return 1;
        }
      }
  return misaligned ? 2 : lost_lane ? 3 : 0;
}

}  // namespace fsr_emu
