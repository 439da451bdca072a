// Drives the capture library's snapshot as the CUDA driver would (no GPU needed), over memory
// that holds pointers: a linked list of four nodes, each its own allocation, and a struct whose
// `char* name` points into another, a struct by value holding a pointer, and a pointer one past the
// end of an allocation beside a one-byte functor. The fake device memory is a map of allocations.
#include "fsr_capture.cpp"
#include "driver_calls.h"

static std::map<CUdeviceptr, std::vector<unsigned char>> memory;

static CUresult fake_param_info(void* f, size_t i, size_t* offset, size_t* size) {
  if (f == reinterpret_cast<CUfunction>(0x3)) {  // (View v): a 16-byte struct by value
    if (i >= 1) return CUDA_ERROR_INVALID_VALUE;
    *offset = 0;
    *size = 16;
    return CUDA_SUCCESS;
  }
  bool tail = f == reinterpret_cast<CUfunction>(0x4);  // (float* end, Twice f)
  size_t count = f == reinterpret_cast<CUfunction>(0x1) || tail ? 2 : 1;  // (list_elem*, int) or (DataElement*)
  if (i >= count) return CUDA_ERROR_INVALID_VALUE;
  *offset = i * 8;
  *size = i == 0 ? 8 : tail ? 1 : 4;
  return CUDA_SUCCESS;
}

static CUresult fake_copy(void* dst, CUdeviceptr src, size_t bytes) {
  auto it = memory.upper_bound(src);
  --it;
  memcpy(dst, it->second.data() + (src - it->first), bytes);
  return CUDA_SUCCESS;
}

static void alloc(CUdeviceptr at, std::vector<unsigned char> bytes) {
  CUdeviceptr got = at;
  cuMemAllocManaged_params p{&got, bytes.size(), 1};
  call(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, &p);
  memory[at] = std::move(bytes);
}

static std::vector<unsigned char> node(int key, CUdeviceptr next) {
  std::vector<unsigned char> b(16, 0);
  memcpy(b.data(), &key, 4);
  memcpy(b.data() + 8, &next, 8);
  return b;
}

int main(int argc, char** argv) {
  folder = argv[1];
  snapshot_cap = atol(argv[2]);
  out = fopen((folder + "/launches-1.jsonl").c_str(), "w");
  func_param_info = fake_param_info;
  copy_to_host = fake_copy;
  CUdeviceptr nodes[] = {0x100000, 0x200000, 0x300000, 0x400000};
  for (int i = 0; i < 4; ++i) alloc(nodes[i], node(10 + i, i < 3 ? nodes[i + 1] + 0 : 0));
  int ele = 3;
  void* list_params[] = {&nodes[0], &ele};
  cuLaunchKernel_params p{reinterpret_cast<CUfunction>(0x1), 1, 1, 1, 1, 1, 1, 0, nullptr, list_params, nullptr};
  call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "_Z17gpu_print_elementP9list_elemi");
  CUdeviceptr name = 0x500000, elem = 0x600000;
  alloc(name, std::vector<unsigned char>{'h', 'e', 'l', 'l', 'o', 0});
  std::vector<unsigned char> e(16, 0);
  memcpy(e.data(), &name, 8);
  int value = 10;
  memcpy(e.data() + 8, &value, 4);
  alloc(elem, e);
  void* elem_params[] = {&elem};
  cuLaunchKernel_params q{reinterpret_cast<CUfunction>(0x2), 1, 1, 1, 1, 1, 1, 0, nullptr, elem_params, nullptr};
  call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &q, "_Z6KernelP11DataElement");
  CUdeviceptr data = 0x700000;  // a struct by value whose pointer member points into `data`
  alloc(data, std::vector<unsigned char>(64, 7));
  unsigned char view[16] = {};
  CUdeviceptr into = data + 8;
  memcpy(view, &into, 8);
  int count = 14;
  memcpy(view + 8, &count, 4);
  void* view_params[] = {view};
  cuLaunchKernel_params v{reinterpret_cast<CUfunction>(0x3), 1, 1, 1, 1, 1, 1, 0, nullptr, view_params, nullptr};
  call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &v, "_Z4show4View");
  CUdeviceptr end = data + 64;  // one past the end of `data` (a tail of no elements), then a one-byte functor
  unsigned char functor = 0;
  void* tail_params[] = {&end, &functor};
  cuLaunchKernel_params t{reinterpret_cast<CUfunction>(0x4), 1, 1, 1, 1, 1, 1, 0, nullptr, tail_params, nullptr};
  call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &t, "_Z4tailPf5Twice");
  finish();
  return 0;
}
