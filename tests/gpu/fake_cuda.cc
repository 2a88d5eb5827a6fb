// A stand-in for the CUDA driver library (libcuda.so.1), for tests on
// machines without a GPU: carton opens it through CARTON_LIBCUDA.
//
// Device memory is host memory. As with the real driver, the current
// context is per thread, and the calls that need one fail without it
// (CUDA_ERROR_INVALID_CONTEXT). Copies to the device are *deferred*: each
// stream keeps a queue, run only when the stream or an event recorded on it
// is synchronized, so code that reuses a staging buffer before its copy has
// completed reads wrong bytes here, as it would on a GPU.
//
// Environment:
//   FAKE_CUDA_DEVICES   number of GPUs (default 2; 0: cuInit fails with
//                       CUDA_ERROR_NO_DEVICE, as the real driver does)
//   FAKE_CUDA_MEMORY    bytes of memory per GPU (default 1 GiB); an
//                       allocation past it fails with out of memory
//   FAKE_CUDA_FAIL_COPY the n-th (1-based) copy to the device fails when run
//   FAKE_CUDA_LOG       a file each allocation and free is appended to
//                       ("alloc <bytes>", "free <bytes>", "hostalloc", ...)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3,
                   kNoDevice = 100, kInvalidDevice = 101, kInvalidContext = 201,
                   kLaunchFailed = 719;

struct Op {
  bool is_event = false;
  void* event = nullptr;
  CUdeviceptr destination = 0;
  const void* source = nullptr;
  std::size_t size = 0;
};
struct Stream {
  std::deque<Op> queue;
  CUresult error = kSuccess;
};
struct Event {
  Stream* stream = nullptr;  // where it was last recorded
  CUresult error = kSuccess;
};

std::mutex mu;
bool initialized = false;
// The thread's current context: a device's ordinal, -1 for none.
thread_local int current_device = -1;
std::map<CUdeviceptr, std::pair<int, std::size_t>> allocations;  // address -> (device, size)
std::map<int, std::size_t> used;
long copies = 0;

long Env(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : fallback;
}
int Devices() { return static_cast<int>(Env("FAKE_CUDA_DEVICES", 2)); }
std::size_t Memory() { return static_cast<std::size_t>(Env("FAKE_CUDA_MEMORY", 1L << 30)); }

void Log(const char* what, std::size_t size) {
  const char* path = std::getenv("FAKE_CUDA_LOG");
  if (path == nullptr) return;
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s %zu\n", what, size);
    std::fclose(f);
  }
}

// Runs a stream's queue up to and including `until` (an event), or all.
CUresult Drain(Stream* s, void* until) {
  while (!s->queue.empty()) {
    Op op = s->queue.front();
    s->queue.pop_front();
    if (op.is_event) {
      static_cast<Event*>(op.event)->error = s->error;
      if (op.event == until) break;
      continue;
    }
    if (s->error != kSuccess) continue;
    ++copies;
    if (copies == Env("FAKE_CUDA_FAIL_COPY", 0)) {
      s->error = kLaunchFailed;
      continue;
    }
    std::memcpy(reinterpret_cast<void*>(op.destination), op.source, op.size);
  }
  return s->error;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned) {
  std::lock_guard lock(mu);
  if (Devices() <= 0) return kNoDevice;
  initialized = true;
  return kSuccess;
}
CUresult cuGetErrorName(CUresult e, const char** name) {
  switch (e) {
    case kOutOfMemory:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      return kSuccess;
    case kNoDevice:
      *name = "CUDA_ERROR_NO_DEVICE";
      return kSuccess;
    case kInvalidDevice:
      *name = "CUDA_ERROR_INVALID_DEVICE";
      return kSuccess;
    case kLaunchFailed:
      *name = "CUDA_ERROR_LAUNCH_FAILED";
      return kSuccess;
    case kInvalidValue:
      *name = "CUDA_ERROR_INVALID_VALUE";
      return kSuccess;
    case kInvalidContext:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      return kSuccess;
    default:
      *name = "CUDA_ERROR_UNKNOWN";
      return kSuccess;
  }
}
CUresult cuGetErrorString(CUresult e, const char** text) {
  *text = e == kOutOfMemory ? "out of memory" : "fake driver error";
  return kSuccess;
}
CUresult cuDeviceGetCount(int* count) {
  if (!initialized) return kNotInitialized;
  *count = Devices();
  return kSuccess;
}
CUresult cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= Devices()) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}
CUresult cuDeviceGetName(char* name, int length, int device) {
  std::snprintf(name, static_cast<std::size_t>(length), "Fake GPU %d", device);
  return kSuccess;
}
CUresult cuDeviceGetUuid_v2(unsigned char* uuid, int device) {
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(0x10 * device + i);
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  *bytes = Memory();
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(void** context, int device) {
  *context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(device + 1));
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
CUresult cuCtxSetCurrent(void* context) {
  current_device = static_cast<int>(reinterpret_cast<std::uintptr_t>(context)) - 1;
  return kSuccess;
}
CUresult cuCtxGetCurrent(void** context) {
  *context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(current_device + 1));
  return kSuccess;
}
CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  std::lock_guard lock(mu);
  *total = Memory();
  *free = Memory() - used[current_device];
  return kSuccess;
}
CUresult cuMemAlloc_v2(CUdeviceptr* pointer, std::size_t size) {
  std::lock_guard lock(mu);
  if (current_device < 0) return kInvalidContext;
  if (size > Memory() - used[current_device]) return kOutOfMemory;
  void* p = std::malloc(size);
  if (p == nullptr) return kOutOfMemory;
  *pointer = reinterpret_cast<CUdeviceptr>(p);
  allocations[*pointer] = {current_device, size};
  used[current_device] += size;
  Log("alloc", size);
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  std::lock_guard lock(mu);
  if (current_device < 0) return kInvalidContext;
  auto it = allocations.find(pointer);
  if (it == allocations.end()) return kInvalidValue;
  used[it->second.first] -= it->second.second;
  Log("free", it->second.second);
  allocations.erase(it);
  std::free(reinterpret_cast<void*>(pointer));
  return kSuccess;
}
CUresult cuMemHostAlloc(void** pointer, std::size_t size, unsigned) {
  if (current_device < 0) return kInvalidContext;
  *pointer = std::malloc(size);
  Log("hostalloc", size);
  return *pointer != nullptr ? kSuccess : kOutOfMemory;
}
CUresult cuMemFreeHost(void* pointer) {
  if (current_device < 0) return kInvalidContext;
  Log("hostfree", 0);
  std::free(pointer);
  return kSuccess;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr destination, const void* source, std::size_t size,
                              void* stream) {
  std::lock_guard lock(mu);
  if (current_device < 0) return kInvalidContext;
  if (stream == nullptr) return kInvalidValue;  // carton always names a stream
  static_cast<Stream*>(stream)->queue.push_back({false, nullptr, destination, source, size});
  return kSuccess;
}
CUresult cuMemcpyDtoH_v2(void* destination, CUdeviceptr source, std::size_t size) {
  std::memcpy(destination, reinterpret_cast<const void*>(source), size);
  return kSuccess;
}
CUresult cuStreamCreate(void** stream, unsigned) {
  if (current_device < 0) return kInvalidContext;
  *stream = new Stream;
  return kSuccess;
}
CUresult cuStreamDestroy_v2(void* stream) {
  std::lock_guard lock(mu);
  Drain(static_cast<Stream*>(stream), nullptr);
  delete static_cast<Stream*>(stream);
  return kSuccess;
}
CUresult cuStreamSynchronize(void* stream) {
  std::lock_guard lock(mu);
  return Drain(static_cast<Stream*>(stream), nullptr);
}
CUresult cuEventCreate(void** event, unsigned) {
  if (current_device < 0) return kInvalidContext;
  *event = new Event;
  return kSuccess;
}
CUresult cuEventRecord(void* event, void* stream) {
  std::lock_guard lock(mu);
  static_cast<Event*>(event)->stream = static_cast<Stream*>(stream);
  static_cast<Stream*>(stream)->queue.push_back({true, event, 0, nullptr, 0});
  return kSuccess;
}
CUresult cuEventSynchronize(void* event) {
  std::lock_guard lock(mu);
  auto* e = static_cast<Event*>(event);
  if (e->stream == nullptr) return kSuccess;
  for (const Op& op : e->stream->queue) {
    if (op.is_event && op.event == event) return Drain(e->stream, event);
  }
  return e->error;
}
CUresult cuEventDestroy_v2(void* event) {
  delete static_cast<Event*>(event);
  return kSuccess;
}

}  // extern "C"
