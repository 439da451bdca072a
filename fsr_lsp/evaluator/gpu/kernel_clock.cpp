// The evaluator's kernel clock: each timed launch's GPU time from CUPTI's concurrent-kernel
// activity records (the GPU's own start and end stamps of the kernel), the clock the capture
// reads the user's run with. Two events around a launch also count the GPU's launch processing
// and the events' own work, a few microseconds that dominate a short kernel's time.
//
// The host tags the launches it times (fsr_clock_tag); a launch API call made under a tag has
// its correlation id mapped to the tag, and the kernel records with that id give the tag's span:
// its first kernel's start to its last kernel's end, and how many kernels ran.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace {

#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
#elif defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 18
typedef CUpti_ActivityKernel9 KernelRecord;
#else
typedef CUpti_ActivityKernel5 KernelRecord;
#endif

struct Span {
  uint64_t start = UINT64_MAX;
  uint64_t end = 0;
  uint32_t kernels = 0;
};

std::mutex lock;
std::map<uint32_t, uint64_t> tagged;  // API correlation id -> tag
std::map<uint64_t, Span> spans;       // tag -> its kernels' span
std::atomic<uint64_t> current{0};     // the tag of launches made now (set by the timing thread)
CUpti_SubscriberHandle subscriber = nullptr;

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  {
    std::lock_guard<std::mutex> guard(lock);
    while (buffer && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      const KernelRecord* k = reinterpret_cast<const KernelRecord*>(record);
      auto it = tagged.find(k->correlationId);
      if (it == tagged.end()) continue;
      Span& s = spans[it->second];
      if (k->start < s.start) s.start = k->start;
      if (k->end > s.end) s.end = k->end;
      s.kernels += 1;
    }
  }
  free(buffer);
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const CUpti_CallbackData* cb = static_cast<const CUpti_CallbackData*>(data);
  const uint64_t tag = current.load();
  if (cb->callbackSite != CUPTI_API_ENTER || tag == 0) return;
  std::lock_guard<std::mutex> guard(lock);
  tagged[cb->correlationId] = tag;
}

}  // namespace

extern "C" {

// 0 where the clock runs; else a CUPTI result code (another profiler may hold CUPTI).
int fsr_clock_open() {
  if (subscriber) return 0;
  CUptiResult r = cuptiSubscribe(&subscriber, callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    subscriber = nullptr;
    return static_cast<int>(r);
  }
  const CUpti_CallbackId driver[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
  for (CUpti_CallbackId id : driver) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  const CUpti_CallbackId runtime[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
#if CUDA_VERSION >= 13000
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
  };
  for (CUpti_CallbackId id : runtime) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  r = cuptiActivityRegisterCallbacks(requested, completed);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    cuptiUnsubscribe(subscriber);
    subscriber = nullptr;
    return static_cast<int>(r);
  }
  return 0;
}

// Launches from now on carry `tag` (0: untagged, not timed).
void fsr_clock_tag(uint64_t tag) { current.store(tag); }

// Every tag's span since the last read, after the GPU's records are flushed (call after a
// synchronize). Fills at most `max` entries and returns how many; the rest are dropped.
int fsr_clock_read(uint64_t* tags, uint64_t* starts, uint64_t* ends, uint32_t* kernels, int max) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> guard(lock);
  int n = 0;
  for (const auto& entry : spans) {
    if (n >= max) break;
    tags[n] = entry.first;
    starts[n] = entry.second.start;
    ends[n] = entry.second.end;
    kernels[n] = entry.second.kernels;
    ++n;
  }
  spans.clear();
  tagged.clear();
  return n;
}

void fsr_clock_close() {
  if (!subscriber) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiUnsubscribe(subscriber);
  subscriber = nullptr;
  current.store(0);
}

}  // extern "C"
