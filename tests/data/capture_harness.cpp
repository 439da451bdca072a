// Drives the capture library's callback as the CUDA driver would (no GPU needed): allocations,
// launches through kernelParams and through a parameter buffer, a repeated launch, a pointer
// into the middle of an allocation, a freed allocation, a template kernel, a kernel filter, a
// struct passed by value holding a pointer.
#include "fsr_capture.cpp"

static const size_t kSizes[] = {8, 8, 4, 4}, kOffsets[] = {0, 8, 16, 20};

static CUfunction const kStructKernel = reinterpret_cast<CUfunction>(0x2);  // takes one 24-byte struct

static CUresult fake_param_info(void* f, size_t i, size_t* offset, size_t* size) {
  if (f == kStructKernel) {
    if (i >= 1) return CUDA_ERROR_INVALID_VALUE;
    *offset = 0;
    *size = 24;
    return CUDA_SUCCESS;
  }
  if (i >= 4) return CUDA_ERROR_INVALID_VALUE;
  *offset = kOffsets[i];
  *size = kSizes[i];
  return CUDA_SUCCESS;
}

static CUresult ok = CUDA_SUCCESS;

static void call(CUpti_ApiCallbackSite site, CUpti_CallbackId id, const void* params, const char* symbol = nullptr) {
  CUpti_CallbackData cb{};
  cb.callbackSite = site;
  cb.functionParams = params;
  cb.functionReturnValue = &ok;
  cb.symbolName = symbol;
  callback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, id, &cb);
}

static void alloc(CUdeviceptr at, size_t bytes) {
  CUdeviceptr got = at;
  cuMemAlloc_v2_params p{&got, bytes};
  call(CUPTI_API_EXIT, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p);
}

static void launch(const char* symbol, unsigned grid, unsigned block, void** params, void** extra = nullptr,
                   CUfunction f = reinterpret_cast<CUfunction>(0x1)) {
  cuLaunchKernel_params p{f, grid, 1, 1, block, 1, 1, 0, nullptr, params, extra};
  call(CUPTI_API_ENTER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, symbol);
}

int main(int argc, char** argv) {
  folder = argv[1];
  out = fopen((folder + "/launches-1.jsonl").c_str(), "w");
  if (argc > 2) wanted.insert(argv[2]);
  func_param_info = fake_param_info;
  CUdeviceptr y = 0x100000, x = 0x200000;
  alloc(y, 4000);
  alloc(x, 4000);
  float a = 2.5f;
  int n = 1000;
  void* params[] = {&y, &x, &a, &n};
  for (int i = 0; i < 3; ++i) launch("_Z5scalePfPKffi", 4, 256, params);  // one record, counted 3 times
  CUdeviceptr x_mid = x + 400;  // a pointer into the middle of x's allocation
  int n2 = 900;
  void* shifted[] = {&y, &x_mid, &a, &n2};
  launch("_Z5scalePfPKffi", 4, 256, shifted);
  unsigned char buffer[24] = {};  // the same launch through CU_LAUNCH_PARAM_BUFFER_POINTER
  memcpy(buffer, &y, 8);
  memcpy(buffer + 8, &x, 8);
  float half = 0.5f;
  memcpy(buffer + 16, &half, 4);
  memcpy(buffer + 20, &n, 4);
  size_t buffer_size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size, CU_LAUNCH_PARAM_END};
  launch("scale", 8, 128, nullptr, extra);  // extern "C": not mangled
  struct { int width, height, stride; CUdeviceptr elements; } m{64, 60, 70, 0x300000 + 280};
  alloc(0x300000, 4 * 61 * 70);  // the matrix starts one row (70 floats) into its allocation
  void* by_value[] = {&m};
  launch("_Z3mmk6Matrix", 4, 256, by_value, nullptr, kStructKernel);
  cuMemFree_v2_params freed{y};
  call(CUPTI_API_ENTER, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &freed);
  launch("_Z6rowsumILi64EEvPKfPfii", 5, 64, params);  // y is no allocation any more
  CUpti_CallbackData rt{};  // a runtime launch that reaches the driver's callbacks, then one that does not
  rt.symbolName = "_Z5scalePfPKffi";
  for (int reaches = 1; reaches >= 0; --reaches) {
    rt.callbackSite = CUPTI_API_ENTER;
    callback(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &rt);
    if (reaches) launch("_Z5scalePfPKffi", 2, 256, params);
    rt.callbackSite = CUPTI_API_EXIT;
    callback(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &rt);
  }
  finish();
  return 0;
}
