// fsr capture: a CUPTI injection library (loaded by the CUDA driver through
// CUDA_INJECTION64_PATH, as profilers are) that records each kernel launch of a program:
// grid, block, dynamic shared memory, every parameter's bytes (layout from the driver,
// cuFuncGetParamInfo), and for a parameter that points into device memory the allocation it
// points into (base, size, offset); for a texture object, its array's (or linear memory's)
// format, channels and extent and its sampler settings. Allocations are tracked from the driver's own calls, so a
// program with a static cudart, a pycuda script and PyTorch (caching allocator off) are seen
// alike. Identical launches are written once and counted; writes are flushed line by line so
// a program that crashes keeps what it launched. Optional: the bytes of each pointer argument
// at the first launch of each kernel (a size cap), for verification on real inputs.
//
// Environment: FSR_CAPTURE_OUT (folder, required), FSR_CAPTURE_KERNELS (comma-separated
// names; empty: all), FSR_CAPTURE_MAX (distinct launches kept per kernel, default 64),
// FSR_CAPTURE_SNAPSHOT_BYTES (cap on the bytes saved per kernel; 0: none). Saved memory that
// holds pointers into other allocations is followed (follow_links): those are saved too.
// Each recorded launch's GPU time comes from CUPTI's concurrent-kernel activity records (the
// GPU's own start and end stamps, kernels not serialised), joined to the launch by correlation
// id and written at exit as the median of its launches ("time" records; none if it crashes).

#include <cuda.h>
#include <cupti.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct Allocation {
  size_t size;
  const char* via;
};

typedef CUresult (*ParamInfoFn)(void*, size_t, size_t*, size_t*);
typedef CUresult (*PointerAttributeFn)(void*, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*SyncFn)(CUstream);
typedef CUresult (*CopyFn)(void*, CUdeviceptr, size_t);
typedef CUresult (*TexResourceFn)(CUDA_RESOURCE_DESC*, CUtexObject);
typedef CUresult (*TexDescFn)(CUDA_TEXTURE_DESC*, CUtexObject);
typedef CUresult (*ArrayDescFn)(CUDA_ARRAY3D_DESCRIPTOR*, CUarray);

#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
#elif defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 18
typedef CUpti_ActivityKernel9 KernelRecord;
#else
typedef CUpti_ActivityKernel5 KernelRecord;
#endif

std::mutex lock;
std::mutex timing;  // the activity buffers' thread: never under `lock`, so a flush inside a callback cannot deadlock
std::map<uint32_t, int> correlated;  // API correlation id -> launch id, until its kernel's record comes
std::map<int, std::vector<uint64_t>> durations;  // launch id -> GPU nanoseconds of its launches (the first 1000)
thread_local uint32_t runtime_correlation = 0;  // the runtime launch call this thread is inside, if any
bool timing_on = false;
std::map<uint64_t, Allocation> allocations;  // base -> allocation
std::map<std::string, int> kept;               // kernel -> distinct launches written
std::map<std::string, std::pair<int, long>> seen;  // launch signature -> (id, count)
std::set<std::string> snapshotted;
std::set<std::string> wanted;
FILE* out = nullptr;
std::string folder;
int max_per_kernel = 64;
long snapshot_cap = 0;
int next_id = 0;
thread_local bool inside = false;  // our own driver calls raise callbacks too
thread_local long driver_launches = 0;  // driver launches seen on this thread
thread_local long at_runtime_entry = -1;
std::set<std::string> unseen;  // runtime launches no driver launch callback came for
ParamInfoFn func_param_info = nullptr, kernel_param_info = nullptr;
PointerAttributeFn pointer_attribute = nullptr;
SyncFn stream_sync = nullptr;
CopyFn copy_to_host = nullptr;
TexResourceFn texture_resource = nullptr;
TexDescFn texture_desc = nullptr;
ArrayDescFn array_desc = nullptr;

std::string escaped(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') { r += '\\'; r += c; }
    else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); r += b; }
    else r += c;
  }
  return r;
}

std::string demangled(const char* mangled) {
  int status = 0;
  char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string r = (status == 0 && name) ? name : mangled;
  free(name);
  return r;
}

// `void ns::K<16, float>(float*, int)` -> `K`: the name the source gives the kernel.
std::string base_name(const std::string& full) {
  int depth = 0;
  size_t end = full.size();
  for (size_t i = 0; i < full.size(); ++i) {
    char c = full[i];
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if ((c == '(') && depth == 0) { end = i; break; }
  }
  std::string head = full.substr(0, end);
  depth = 0;  // strip template arguments, then the return type and namespaces
  std::string plain;
  for (char c : head) {
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (depth == 0) plain += c;
  }
  size_t cut = plain.find_last_of(": ");
  return cut == std::string::npos ? plain : plain.substr(cut + 1);
}

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string r;
  for (size_t i = 0; i < n; ++i) { r += digits[p[i] >> 4]; r += digits[p[i] & 15]; }
  return r;
}

// The allocation a value points into: tracked first (the size the program asked for), else
// the driver's own range (memory allocated before we were loaded).
bool find_allocation(uint64_t value, uint64_t* base, size_t* size, std::string* via) {
  auto it = allocations.upper_bound(value);
  if (it != allocations.begin()) {
    --it;
    if (value >= it->first && value < it->first + it->second.size) {
      *base = it->first; *size = it->second.size; *via = it->second.via;
      return true;
    }
  }
  if (!pointer_attribute || value < 4096) return false;
  CUdeviceptr start = 0;
  size_t range = 0;
  if (pointer_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, value) != CUDA_SUCCESS) return false;
  if (pointer_attribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, value) != CUDA_SUCCESS) return false;
  *base = start; *size = range; *via = "driver range";
  return true;
}

// A texture object's resource and sampler, when `value` is the handle of one (a scalar that
// happens to equal a live handle is recorded too; the kernel's signature says which it is).
std::string texture_of(uint64_t value) {
  if (!texture_resource || !texture_desc || value == 0 || value >= (1ull << 32)) return "";
  CUDA_RESOURCE_DESC res;
  CUDA_TEXTURE_DESC tex;
  memset(&res, 0, sizeof res);
  memset(&tex, 0, sizeof tex);
  if (texture_resource(&res, value) != CUDA_SUCCESS || texture_desc(&tex, value) != CUDA_SUCCESS) return "";
  char b[320];
  unsigned format = 0, channels = 0, flags3d = 0;
  size_t w = 0, h = 0, d = 0;
  const char* kind = "";
  if (res.resType == CU_RESOURCE_TYPE_ARRAY && array_desc) {
    CUDA_ARRAY3D_DESCRIPTOR a;
    memset(&a, 0, sizeof a);
    if (array_desc(&a, res.res.array.hArray) != CUDA_SUCCESS) return "";
    kind = "array"; format = a.Format; channels = a.NumChannels; w = a.Width; h = a.Height; d = a.Depth;
    flags3d = a.Flags;
  } else if (res.resType == CU_RESOURCE_TYPE_LINEAR) {
    kind = "linear"; format = res.res.linear.format; channels = res.res.linear.numChannels;
    w = res.res.linear.sizeInBytes;  // in bytes: the texel size follows from the format
  } else if (res.resType == CU_RESOURCE_TYPE_PITCH2D) {
    kind = "pitch2d"; format = res.res.pitch2D.format; channels = res.res.pitch2D.numChannels;
    w = res.res.pitch2D.width; h = res.res.pitch2D.height;
  } else {
    return "";
  }
  snprintf(b, sizeof b, "{\"kind\":\"%s\",\"format\":%u,\"channels\":%u,\"dims\":[%zu,%zu,%zu],"
           "\"address\":[%d,%d,%d],\"filter\":%d,\"flags\":%u,\"flags3d\":%u}", kind, format, channels, w, h, d,
           (int)tex.addressMode[0], (int)tex.addressMode[1], (int)tex.addressMode[2], (int)tex.filterMode, tex.flags,
           flags3d);
  return b;
}

struct Param {
  size_t offset, size;
  const unsigned char* bytes;
};

std::vector<Param> params_of(CUfunction f, void** kernelParams, void** extra) {
  std::vector<Param> r;
  const unsigned char* buffer = nullptr;
  if (!kernelParams && extra) {  // CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, ...
    for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2)
      if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const unsigned char*>(e[1]);
  }
  for (size_t i = 0; i < 4096; ++i) {
    size_t offset = 0, size = 0;
    bool ok = func_param_info && func_param_info(f, i, &offset, &size) == CUDA_SUCCESS;
    if (!ok) ok = kernel_param_info && kernel_param_info(f, i, &offset, &size) == CUDA_SUCCESS;
    if (!ok) break;
    const unsigned char* bytes = kernelParams ? static_cast<const unsigned char*>(kernelParams[i])
                                              : buffer ? buffer + offset : nullptr;
    r.push_back({offset, size, bytes});
  }
  return r;
}

// Saves an allocation's bytes to `path`; its contents (empty when they could not be read).
std::vector<unsigned char> snapshot(const std::string& path, uint64_t base, size_t size, CUstream stream) {
  std::vector<unsigned char> data(size);
  if (stream_sync) stream_sync(stream);
  if (!copy_to_host || copy_to_host(data.data(), base, size) != CUDA_SUCCESS) return {};
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return {};
  fwrite(data.data(), 1, size, f);
  fclose(f);
  return data;
}

// The tracked allocation (base, size) an 8-byte word points into, if any. Only allocations the
// program made while we watched: a word of data equal to an address in one is vanishingly rare.
bool tracked(uint64_t value, uint64_t* base, size_t* size) {
  auto it = allocations.upper_bound(value);
  if (it == allocations.begin()) return false;
  --it;
  // one past the end counts (a range's `end`): an allocation starting there would have been found
  if (value < it->first || value > it->first + it->second.size) return false;
  *base = it->first;
  *size = it->second.size;
  return true;
}

const size_t MAX_FOLLOWED = 4096;  // allocations saved because saved memory points into them

// Memory that holds pointers (a struct's `char* name`, a list's `next`, a table of `void*`):
// every aligned word of each saved allocation that points into a tracked allocation is a link,
// written beside the saved file as `FILE.links` ("AT TARGET_FILE OFFSET" a line). An allocation
// linked to and not saved yet is saved too ("inputs-PID-ID-hK.bin"), while the cap allows, and
// followed in turn: the evaluator rebuilds the graph at its own addresses.
void follow_links(std::map<uint64_t, std::string>& saved, std::vector<std::pair<uint64_t, std::vector<unsigned char>>> queue,
                  long total, int id, CUstream stream) {
  size_t followed = 0;
  for (size_t q = 0; q < queue.size(); ++q) {
    uint64_t base = queue[q].first;
    std::string links;
    for (size_t at = 0; at + 8 <= queue[q].second.size(); at += 8) {
      uint64_t word = 0, target = 0;
      size_t size = 0;
      memcpy(&word, queue[q].second.data() + at, 8);
      if (!tracked(word, &target, &size)) continue;
      auto found = saved.find(target);
      if (found == saved.end()) {
        std::vector<unsigned char> data;
        std::string file = "inputs-" + std::to_string(getpid()) + "-" + std::to_string(id) + "-h" +
                           std::to_string(followed) + ".bin";
        if (followed < MAX_FOLLOWED && total + static_cast<long>(size) <= snapshot_cap)
          data = snapshot(folder + "/" + file, target, size, stream);
        if (data.empty()) {  // not saved (over the cap): "-", where the evaluator writes null
          links += std::to_string(at) + " - 0\n";
          continue;
        }
        ++followed;
        total += static_cast<long>(size);
        found = saved.emplace(target, file).first;
        queue.push_back({target, std::move(data)});
      }
      links += std::to_string(at) + " " + found->second + " " + std::to_string(word - target) + "\n";
    }
    if (links.empty()) continue;
    FILE* f = fopen((folder + "/" + saved[base] + ".links").c_str(), "w");
    if (!f) continue;
    fputs(links.c_str(), f);
    fclose(f);
  }
}

void correlate(uint32_t correlation, int id) {
  if (!timing_on) return;
  std::lock_guard<std::mutex> guard(timing);
  if (correlated.size() < 100000) {
    correlated[correlation] = id;
    if (runtime_correlation) correlated[runtime_correlation] = id;
  }
}

void on_launch(const char* symbol, CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned smem,
               CUstream stream, void** kernelParams, void** extra, uint32_t correlation) {
  if (!out || !symbol) return;
  std::string name = demangled(symbol), base = base_name(name);
  if (!wanted.empty() && !wanted.count(base)) return;
  std::vector<Param> params = params_of(f, kernelParams, extra);
  std::string sig = std::string(symbol) + "|" + std::to_string(grid[0]) + "," + std::to_string(grid[1]) + "," +
                    std::to_string(grid[2]) + "|" + std::to_string(block[0]) + "," + std::to_string(block[1]) + "," +
                    std::to_string(block[2]) + "|" + std::to_string(smem);
  std::string body;
  // what a snapshot may save: "3" (a pointer parameter) or "3.16" (the word at byte 16 of a struct
  // passed by value) -> (base, size) of the allocation it points into
  std::vector<std::pair<std::string, std::pair<uint64_t, size_t>>> pointers;
  std::vector<bool> points(params.size(), false);  // parameters that are pointers into (or to the end of) an allocation
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    std::string item = "{\"offset\":" + std::to_string(p.offset) + ",\"size\":" + std::to_string(p.size);
    if (p.bytes) {
      uint64_t value = 0, base_addr = 0;
      size_t alloc_size = 0;
      std::string via;
      if (p.size == 8) memcpy(&value, p.bytes, 8);
      if (p.size == 8 && find_allocation(value, &base_addr, &alloc_size, &via)) {
        item += ",\"alloc\":{\"size\":" + std::to_string(alloc_size) + ",\"offset\":" +
                std::to_string(value - base_addr) + ",\"base\":" + std::to_string(base_addr) + ",\"via\":\"" +
                escaped(via) + "\"}";
        sig += "|p" + std::to_string(alloc_size) + "+" + std::to_string(value - base_addr);
        pointers.push_back({std::to_string(i), {base_addr, alloc_size}});
        points[i] = true;
      } else if (p.size == 8 && value > 4096 && find_allocation(value - 1, &base_addr, &alloc_size, &via) &&
                 value == base_addr + alloc_size) {
        // one past the end of an allocation (`r + n` where nothing is left): a pointer to no byte
        item += ",\"alloc\":{\"size\":" + std::to_string(alloc_size) + ",\"offset\":" + std::to_string(alloc_size) +
                ",\"base\":" + std::to_string(base_addr) + ",\"via\":\"" + escaped(via) + "\"}";
        sig += "|e" + std::to_string(alloc_size);
        points[i] = true;
      } else {
        std::string h = hex(p.bytes, p.size < 256 ? p.size : 256);
        item += ",\"hex\":\"" + h + "\"";
        // a struct passed by value: each aligned 8-byte word that points into an allocation
        // (its pointer members; which words are members, the struct's declaration says)
        std::string words;
        for (size_t at = 0; p.size > 8 && at + 8 <= p.size && at < 256; at += 8) {
          uint64_t word = 0, word_base = 0;
          size_t word_size = 0;
          std::string word_via;
          memcpy(&word, p.bytes + at, 8);
          if (!find_allocation(word, &word_base, &word_size, &word_via)) continue;
          words += std::string(words.empty() ? "" : ",") + "{\"at\":" + std::to_string(at) + ",\"size\":" +
                   std::to_string(word_size) + ",\"offset\":" + std::to_string(word - word_base) + ",\"via\":\"" +
                   escaped(word_via) + "\"}";
          sig += "|w" + std::to_string(at) + ":" + std::to_string(word_size) + "+" + std::to_string(word - word_base);
          pointers.push_back({std::to_string(i) + "." + std::to_string(at), {word_base, word_size}});
        }
        if (!words.empty()) item += ",\"words\":[" + words + "]";
        std::string texture = p.size == 8 ? texture_of(value) : "";
        if (!texture.empty()) item += ",\"texture\":" + texture;
        sig += "|" + h;
      }
    }
    body += (body.empty() ? "" : ",") + item + "}";
  }
  auto found = seen.find(sig);
  if (found != seen.end()) {
    found->second.second++;
    correlate(correlation, found->second.first);
    return;
  }
  if (kept[base] >= max_per_kernel) return;
  kept[base]++;
  int id = next_id++;
  seen[sig] = {id, 1};
  correlate(correlation, id);
  std::string snap;
  if (snapshot_cap > 0 && !snapshotted.count(name)) {
    snapshotted.insert(name);
    // The smallest buffers first, while the total stays under the cap: when a kernel's buffers
    // are too big to save whole, its small ones (token ids, offsets, flags: the indices) still are.
    std::vector<std::pair<std::string, std::pair<uint64_t, size_t>>> order(pointers.begin(), pointers.end());
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
    long total = 0;
    std::map<uint64_t, std::string> saved;  // allocation base -> its file
    std::vector<std::pair<uint64_t, std::vector<unsigned char>>> contents;
    for (auto& pp : order) {
      std::string file = "inputs-" + std::to_string(getpid()) + "-" + std::to_string(id) + "-" + pp.first + ".bin";
      auto known = saved.find(pp.second.first);
      if (known == saved.end()) {
        if (total + static_cast<long>(pp.second.second) > snapshot_cap) break;
        total += static_cast<long>(pp.second.second);
        std::vector<unsigned char> data = snapshot(folder + "/" + file, pp.second.first, pp.second.second, stream);
        if (!data.empty()) {
          saved[pp.second.first] = file;
          contents.push_back({pp.second.first, std::move(data)});
        }
      } else {  // two parameters into one allocation: one file, and one graph node
        file = known->second;
      }
      snap += (snap.empty() ? "\"" : ",\"") + pp.first + "\":\"" + file + "\"";
    }
    // A parameter passed by value that is no pointer (a struct fsr may not read member by member:
    // a nested struct, a class, arrays of pointers, an empty functor of one byte): its own bytes
    // ("pI"), its pointers followed.
    for (size_t i = 0; i < params.size(); ++i) {
      const Param& p = params[i];
      if (!p.bytes || points[i]) continue;
      std::string file = "inputs-" + std::to_string(getpid()) + "-" + std::to_string(id) + "-p" + std::to_string(i) + ".bin";
      FILE* f = fopen((folder + "/" + file).c_str(), "wb");
      if (!f) continue;
      fwrite(p.bytes, 1, p.size, f);
      fclose(f);
      uint64_t pseudo = ~0ull - i;  // no allocation's address: the parameter's own bytes
      saved[pseudo] = file;
      contents.push_back({pseudo, std::vector<unsigned char>(p.bytes, p.bytes + p.size)});
      snap += (snap.empty() ? "\"p" : ",\"p") + std::to_string(i) + "\":\"" + file + "\"";
    }
    follow_links(saved, std::move(contents), total, id, stream);
  }
  fprintf(out,
          "{\"id\":%d,\"kernel\":\"%s\",\"name\":\"%s\",\"base\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
          "\"smem\":%u,\"params\":[%s]%s%s%s}\n",
          id, escaped(symbol).c_str(), escaped(name).c_str(), escaped(base).c_str(), grid[0], grid[1], grid[2],
          block[0], block[1], block[2], smem, body.c_str(), snap.empty() ? "" : ",\"snapshot\":{", snap.c_str(),
          snap.empty() ? "" : "}");
  fflush(out);
}

void track(uint64_t base, size_t size, const char* via) {
  if (base) allocations[base] = {size, via};
}

// A runtime launch (cudaLaunchKernel...) should reach the driver's launch callbacks; one that
// does not is said in the records, so a missing kernel is never silent.
void runtime_launch(const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_ENTER) {
    at_runtime_entry = driver_launches;
    runtime_correlation = cb->correlationId;  // the kernel's record may carry the runtime call's id
    return;
  }
  runtime_correlation = 0;
  if (at_runtime_entry == driver_launches && cb->symbolName && out) {
    std::lock_guard<std::mutex> guard(lock);
    std::string name = demangled(cb->symbolName);
    if ((wanted.empty() || wanted.count(base_name(name))) && unseen.insert(name).second) {
      fprintf(out, "{\"unseen\":\"%s\"}\n", escaped(name).c_str());
      fflush(out);
    }
  }
  at_runtime_entry = -1;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  {
    std::lock_guard<std::mutex> guard(timing);
    while (buffer && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
      const KernelRecord* k = reinterpret_cast<const KernelRecord*>(record);
      auto it = correlated.find(k->correlationId);
      if (it == correlated.end()) continue;
      std::vector<uint64_t>& mine = durations[it->second];
      if (mine.size() < 1000 && k->end > k->start) mine.push_back(k->end - k->start);
      correlated.erase(it);
    }
  }
  free(buffer);
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {  // a context about to go: its kernels' records before it does
    if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && timing_on) cuptiActivityFlushAll(1);
    return;
  }
  if (inside) return;
  const CUpti_CallbackData* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    runtime_launch(cb);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const void* p = cb->functionParams;
  std::lock_guard<std::mutex> guard(lock);
  inside = true;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    switch (id) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        auto* a = static_cast<const cuLaunchKernel_params*>(p);
        unsigned g[3] = {a->gridDimX, a->gridDimY, a->gridDimZ}, b[3] = {a->blockDimX, a->blockDimY, a->blockDimZ};
        on_launch(cb->symbolName, a->f, g, b, a->sharedMemBytes, a->hStream, a->kernelParams, a->extra, cb->correlationId);
        driver_launches++;
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        auto* a = static_cast<const cuLaunchCooperativeKernel_params*>(p);
        unsigned g[3] = {a->gridDimX, a->gridDimY, a->gridDimZ}, b[3] = {a->blockDimX, a->blockDimY, a->blockDimZ};
        on_launch(cb->symbolName, a->f, g, b, a->sharedMemBytes, a->hStream, a->kernelParams, nullptr, cb->correlationId);
        driver_launches++;
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        auto* a = static_cast<const cuLaunchKernelEx_params*>(p);
        const CUlaunchConfig* c = a->config;
        unsigned g[3] = {c->gridDimX, c->gridDimY, c->gridDimZ}, b[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
        on_launch(cb->symbolName, a->f, g, b, c->sharedMemBytes, c->hStream, a->kernelParams, a->extra, cb->correlationId);
        driver_launches++;
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
        allocations.erase(static_cast<const cuMemFree_v2_params*>(p)->dptr);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
        allocations.erase(static_cast<const cuMemFreeAsync_params*>(p)->dptr);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
        allocations.erase(static_cast<const cuMemUnmap_params*>(p)->ptr);
        break;
      default:
        break;
    }
  } else if (*static_cast<CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS) {
    switch (id) {
      case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
        auto* a = static_cast<const cuMemAlloc_v2_params*>(p);
        track(*a->dptr, a->bytesize, "cudaMalloc");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
        auto* a = static_cast<const cuMemAllocPitch_v2_params*>(p);
        track(*a->dptr, *a->pPitch * a->Height, "cudaMallocPitch");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
        auto* a = static_cast<const cuMemAllocManaged_params*>(p);
        track(*a->dptr, a->bytesize, "cudaMallocManaged");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
        auto* a = static_cast<const cuMemAllocAsync_params*>(p);
        track(*a->dptr, a->bytesize, "cudaMallocAsync");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
        auto* a = static_cast<const cuMemAllocFromPoolAsync_params*>(p);
        track(*a->dptr, a->bytesize, "cudaMallocFromPoolAsync");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
        auto* a = static_cast<const cuMemHostAlloc_params*>(p);
        track(reinterpret_cast<uint64_t>(*a->pp), a->bytesize, "cudaHostAlloc");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
        auto* a = static_cast<const cuMemAllocHost_v2_params*>(p);
        track(reinterpret_cast<uint64_t>(*a->pp), a->bytesize, "cudaMallocHost");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
        auto* a = static_cast<const cuMemHostRegister_v2_params*>(p);
        track(reinterpret_cast<uint64_t>(a->p), a->bytesize, "cudaHostRegister");
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
        auto* a = static_cast<const cuMemMap_params*>(p);
        track(a->ptr, a->size, "cuMemMap");
        break;
      }
      default:
        break;
    }
  }
  inside = false;
}

void finish() {
  if (timing_on) cuptiActivityFlushAll(1);  // before `lock`: the records arrive on this thread
  std::lock_guard<std::mutex> guard(lock);
  if (!out) return;
  for (auto& s : seen)
    if (s.second.second > 1) fprintf(out, "{\"count\":%d,\"n\":%ld}\n", s.second.first, s.second.second);
  std::lock_guard<std::mutex> timed(timing);
  for (auto& d : durations) {
    std::vector<uint64_t> ns = d.second;
    if (ns.empty()) continue;
    std::sort(ns.begin(), ns.end());
    fprintf(out, "{\"time\":%d,\"n\":%zu,\"median_ns\":%llu,\"min_ns\":%llu}\n", d.first, ns.size(),
            static_cast<unsigned long long>(ns[ns.size() / 2]), static_cast<unsigned long long>(ns[0]));
  }
  fclose(out);
  out = nullptr;
}

}  // namespace

extern "C" int InitializeInjection(void) {
  const char* dir = getenv("FSR_CAPTURE_OUT");
  if (!dir || !*dir) return 1;
  folder = dir;
  std::string path = folder + "/launches-" + std::to_string(getpid()) + ".jsonl";
  out = fopen(path.c_str(), "w");
  if (!out) return 1;
  if (const char* k = getenv("FSR_CAPTURE_KERNELS")) {
    std::string names = k;
    size_t start = 0;
    while (start <= names.size()) {
      size_t comma = names.find(',', start);
      std::string one = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!one.empty()) wanted.insert(one);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (const char* m = getenv("FSR_CAPTURE_MAX")) max_per_kernel = atoi(m);
  if (const char* s = getenv("FSR_CAPTURE_SNAPSHOT_BYTES")) snapshot_cap = atol(s);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda) {
    func_param_info = reinterpret_cast<ParamInfoFn>(dlsym(cuda, "cuFuncGetParamInfo"));
    kernel_param_info = reinterpret_cast<ParamInfoFn>(dlsym(cuda, "cuKernelGetParamInfo"));
    pointer_attribute = reinterpret_cast<PointerAttributeFn>(dlsym(cuda, "cuPointerGetAttribute"));
    stream_sync = reinterpret_cast<SyncFn>(dlsym(cuda, "cuStreamSynchronize"));
    copy_to_host = reinterpret_cast<CopyFn>(dlsym(cuda, "cuMemcpyDtoH_v2"));
    texture_resource = reinterpret_cast<TexResourceFn>(dlsym(cuda, "cuTexObjectGetResourceDesc"));
    texture_desc = reinterpret_cast<TexDescFn>(dlsym(cuda, "cuTexObjectGetTextureDesc"));
    array_desc = reinterpret_cast<ArrayDescFn>(dlsym(cuda, "cuArray3DGetDescriptor_v2"));
  }
  fprintf(out, "{\"meta\":{\"pid\":%d,\"param_info\":%s}}\n", getpid(),
          func_param_info || kernel_param_info ? "true" : "false");
  fflush(out);
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, callback, nullptr) != CUPTI_SUCCESS) {
    fprintf(out, "{\"error\":\"cuptiSubscribe failed: another profiler may hold CUPTI\"}\n");
    fflush(out);
    return 1;
  }
  const CUpti_CallbackId ids[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap};
  for (CUpti_CallbackId id : ids) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  const CUpti_CallbackId runtime_ids[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
#if CUDA_VERSION >= 13000
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
  };
  for (CUpti_CallbackId id : runtime_ids) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  const char* no_times = getenv("FSR_CAPTURE_NO_TIMES");
  if (!(no_times && *no_times == '1') &&
      cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS &&
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS) {
    timing_on = true;
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  } else {
    fprintf(out, "{\"error\":\"kernel times are not recorded: CUPTI's activity API refused (another profiler?)\"}\n");
    fflush(out);
  }
  atexit(finish);
  return 1;
}
