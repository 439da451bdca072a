// Drives the capture library's snapshot as the CUDA driver would (no GPU needed): a kernel whose
// buffers total more than the cap keeps its smallest ones (the indices), in size order.
#include "fsr_capture.cpp"
#include "driver_calls.h"

static const size_t kSizes[] = {8, 8, 8, 4}, kOffsets[] = {0, 8, 16, 24};

static CUresult fake_param_info(void*, size_t i, size_t* offset, size_t* size) {
  if (i >= 4) return CUDA_ERROR_INVALID_VALUE;
  *offset = kOffsets[i];
  *size = kSizes[i];
  return CUDA_SUCCESS;
}

static CUresult fake_copy(void* dst, CUdeviceptr src, size_t bytes) {
  memset(dst, static_cast<int>(src >> 20), bytes);  // each allocation's bytes say which it is
  return CUDA_SUCCESS;
}

int main(int argc, char** argv) {
  folder = argv[1];
  snapshot_cap = atol(argv[2]);
  out = fopen((folder + "/launches-1.jsonl").c_str(), "w");
  func_param_info = fake_param_info;
  copy_to_host = fake_copy;
  CUdeviceptr table = 0x100000, ids = 0x200000, outp = 0x300000;
  size_t sizes[] = {1 << 16, 256, 1 << 12};  // a table, token ids, an output
  CUdeviceptr at[] = {table, ids, outp};
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr got = at[i];
    cuMemAlloc_v2_params p{&got, sizes[i]};
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p);
  }
  int n = 64;
  void* params[] = {&outp, &table, &ids, &n};
  cuLaunchKernel_params p{reinterpret_cast<CUfunction>(0x1), 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr};
  call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z6lookupPfPKfPKii");
  finish();
  return 0;
}
