// Drives the capture library as the driver and CUPTI's activity API would (no GPU needed): three
// launches of one signature and one of another, each with its correlation id, then a buffer of
// kernel activity records as CUPTI delivers it (one record's id unknown: a kernel not recorded).
#include "fsr_capture.cpp"

#include <vector>

static const size_t kSizes[] = {8, 4}, kOffsets[] = {0, 8};

static CUresult fake_param_info(void*, size_t i, size_t* offset, size_t* size) {
  if (i >= 2) return CUDA_ERROR_INVALID_VALUE;
  *offset = kOffsets[i];
  *size = kSizes[i];
  return CUDA_SUCCESS;
}

static CUresult ok = CUDA_SUCCESS;

static void launch(unsigned grid, uint32_t correlation, void** params) {
  cuLaunchKernel_params p{reinterpret_cast<CUfunction>(0x1), grid, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr};
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_ENTER;
  cb.functionParams = &p;
  cb.functionReturnValue = &ok;
  cb.symbolName = "_Z4fillPfi";
  cb.correlationId = correlation;
  callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
}

int main(int, char** argv) {
  folder = argv[1];
  out = fopen((folder + "/launches-1.jsonl").c_str(), "w");
  func_param_info = fake_param_info;
  timing_on = true;
  CUdeviceptr x = 0x100000;
  CUdeviceptr got = x;
  cuMemAlloc_v2_params a{&got, 4096};
  CUpti_CallbackData cb{};
  cb.callbackSite = CUPTI_API_EXIT;
  cb.functionParams = &a;
  cb.functionReturnValue = &ok;
  callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &cb);
  int n = 1024;
  void* params[] = {&x, &n};
  launch(8, 11, params);
  launch(8, 12, params);
  launch(8, 13, params);
  launch(4, 14, params);
  const uint32_t ids[] = {11, 12, 13, 14, 99};
  const uint64_t ns[] = {3000, 1000, 2000, 500, 7};
  size_t bytes = sizeof(KernelRecord) * 5;
  uint8_t* buffer = static_cast<uint8_t*>(aligned_alloc(8, bytes));
  memset(buffer, 0, bytes);
  for (int i = 0; i < 5; ++i) {
    KernelRecord* k = reinterpret_cast<KernelRecord*>(buffer + i * sizeof(KernelRecord));
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = 1000000;
    k->end = 1000000 + ns[i];
    k->correlationId = ids[i];
  }
  buffer_completed(nullptr, 0, buffer, bytes, bytes);
  timing_on = false;  // no CUPTI to flush here
  finish();
  return 0;
}
