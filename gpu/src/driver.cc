#include "driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace carton::gpu::internal {
namespace {

// The library to open: CARTON_LIBCUDA when set (a test's fake driver, or a
// driver outside the loader's path), else the driver's soname.
std::string LibraryName() {
  const char* name = std::getenv("CARTON_LIBCUDA");
  return name != nullptr && *name != '\0' ? name : "libcuda.so.1";
}

template <typename F>
bool Find(void* library, const char* symbol, F& slot, std::string& missing) {
  slot = reinterpret_cast<F>(dlsym(library, symbol));
  if (slot == nullptr && missing.empty()) missing = symbol;
  return slot != nullptr;
}

Status FindAll(void* library, Driver& d) {
  std::string missing;
  Find(library, "cuInit", d.Init, missing);
  Find(library, "cuGetErrorName", d.GetErrorName, missing);
  Find(library, "cuGetErrorString", d.GetErrorString, missing);
  Find(library, "cuDeviceGetCount", d.DeviceGetCount, missing);
  Find(library, "cuDeviceGet", d.DeviceGet, missing);
  Find(library, "cuDeviceGetName", d.DeviceGetName, missing);
  // cuDeviceGetUuid_v2 (CUDA 11.4) gives MIG instances their own UUIDs;
  // older drivers have only the first.
  std::string no_v2;
  if (!Find(library, "cuDeviceGetUuid_v2", d.DeviceGetUuid, no_v2)) {
    Find(library, "cuDeviceGetUuid", d.DeviceGetUuid, missing);
  }
  Find(library, "cuDeviceTotalMem_v2", d.DeviceTotalMem, missing);
  Find(library, "cuDevicePrimaryCtxRetain", d.DevicePrimaryCtxRetain, missing);
  Find(library, "cuDevicePrimaryCtxRelease_v2", d.DevicePrimaryCtxRelease, missing);
  Find(library, "cuCtxSetCurrent", d.CtxSetCurrent, missing);
  Find(library, "cuCtxGetCurrent", d.CtxGetCurrent, missing);
  Find(library, "cuMemGetInfo_v2", d.MemGetInfo, missing);
  Find(library, "cuMemAlloc_v2", d.MemAlloc, missing);
  Find(library, "cuMemFree_v2", d.MemFree, missing);
  Find(library, "cuMemHostAlloc", d.MemHostAlloc, missing);
  Find(library, "cuMemFreeHost", d.MemFreeHost, missing);
  Find(library, "cuMemcpyHtoDAsync_v2", d.MemcpyHtoDAsync, missing);
  Find(library, "cuMemcpyDtoH_v2", d.MemcpyDtoH, missing);
  Find(library, "cuStreamCreate", d.StreamCreate, missing);
  Find(library, "cuStreamDestroy_v2", d.StreamDestroy, missing);
  Find(library, "cuStreamSynchronize", d.StreamSynchronize, missing);
  Find(library, "cuEventCreate", d.EventCreate, missing);
  Find(library, "cuEventRecord", d.EventRecord, missing);
  Find(library, "cuEventSynchronize", d.EventSynchronize, missing);
  Find(library, "cuEventDestroy_v2", d.EventDestroy, missing);
  if (!missing.empty()) {
    return Unsupported(LibraryName() + ": the CUDA driver has no " + missing +
                       " (a driver older than CUDA 11.4?)");
  }
  return Status::Ok();
}

Result<const Driver*> Open() {
  static Driver driver;
  const std::string name = LibraryName();
  // Never closed: the driver stays loaded for the life of the process, as
  // the CUDA runtime keeps it.
  void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return Unsupported("no CUDA driver: cannot open " + name + " (" +
                       (why != nullptr ? why : "unknown reason") + ")");
  }
  CARTON_RETURN_IF_ERROR(FindAll(library, driver));
  const CuResult result = driver.Init(0);
  if (result == kCudaErrorNoDevice) {
    return Unsupported("no GPU: the CUDA driver (" + name + ") reports no CUDA-capable device");
  }
  if (result != kCudaSuccess) return DriverError(driver, result, "cuInit");
  return &driver;
}

}  // namespace

Result<const Driver*> GetDriver() {
  static std::once_flag once;
  static Result<const Driver*> driver = Internal("the CUDA driver was not opened");
  std::call_once(once, [] { driver = Open(); });
  return driver;
}

Status DriverError(const Driver& driver, CuResult result, std::string_view what) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.GetErrorName(result, &name) != kCudaSuccess || name == nullptr) name = "CUDA_ERROR";
  if (driver.GetErrorString(result, &text) != kCudaSuccess || text == nullptr) text = "";
  std::string message = std::string(what) + ": " + name + " (" + std::to_string(result);
  if (*text != '\0') message += ", " + std::string(text);
  return IoError(message + ")");
}

}  // namespace carton::gpu::internal
