// The CUDA driver's entry points this module uses, looked up by name in the
// library opened at run time. The declarations mirror cuda.h's (the ABI the
// driver has kept stable); only this file and the files beside it see them.
#pragma once

#include <cstddef>
#include <string>

#include "carton/common/status.h"

namespace carton::gpu::internal {

using CuResult = int;  // CUresult: 0 is CUDA_SUCCESS
using CuDevice = int;
using CuDevicePtr = unsigned long long;
struct CuContextSt;
struct CuStreamSt;
struct CuEventSt;
using CuContext = CuContextSt*;
using CuStream = CuStreamSt*;
using CuEvent = CuEventSt*;
struct CuUuid {
  unsigned char bytes[16];
};

inline constexpr CuResult kCudaSuccess = 0;
inline constexpr CuResult kCudaErrorOutOfMemory = 2;
inline constexpr CuResult kCudaErrorNoDevice = 100;
inline constexpr unsigned kMemHostAllocPortable = 0x01;
inline constexpr unsigned kStreamNonBlocking = 0x01;
inline constexpr unsigned kEventDisableTiming = 0x02;

struct Driver {
  CuResult (*Init)(unsigned flags);
  CuResult (*GetErrorName)(CuResult error, const char** name);
  CuResult (*GetErrorString)(CuResult error, const char** text);
  CuResult (*DeviceGetCount)(int* count);
  CuResult (*DeviceGet)(CuDevice* device, int ordinal);
  CuResult (*DeviceGetName)(char* name, int length, CuDevice device);
  CuResult (*DeviceGetUuid)(CuUuid* uuid, CuDevice device);
  CuResult (*DeviceTotalMem)(std::size_t* bytes, CuDevice device);
  CuResult (*DevicePrimaryCtxRetain)(CuContext* context, CuDevice device);
  CuResult (*DevicePrimaryCtxRelease)(CuDevice device);
  CuResult (*CtxSetCurrent)(CuContext context);
  CuResult (*CtxGetCurrent)(CuContext* context);
  CuResult (*MemGetInfo)(std::size_t* free, std::size_t* total);
  CuResult (*MemAlloc)(CuDevicePtr* pointer, std::size_t size);
  CuResult (*MemFree)(CuDevicePtr pointer);
  CuResult (*MemHostAlloc)(void** pointer, std::size_t size, unsigned flags);
  CuResult (*MemFreeHost)(void* pointer);
  CuResult (*MemcpyHtoDAsync)(CuDevicePtr destination, const void* source, std::size_t size,
                              CuStream stream);
  CuResult (*MemcpyDtoH)(void* destination, CuDevicePtr source, std::size_t size);
  CuResult (*StreamCreate)(CuStream* stream, unsigned flags);
  CuResult (*StreamDestroy)(CuStream stream);
  CuResult (*StreamSynchronize)(CuStream stream);
  CuResult (*EventCreate)(CuEvent* event, unsigned flags);
  CuResult (*EventRecord)(CuEvent event, CuStream stream);
  CuResult (*EventSynchronize)(CuEvent event);
  CuResult (*EventDestroy)(CuEvent event);
};

// The driver, opened and initialized (cuInit) once per process. Errors:
// kUnsupported naming the library and dlerror()'s reason, or the missing
// entry point; kUnsupported for cuInit's CUDA_ERROR_NO_DEVICE; kIoError for
// any other cuInit failure. The same answer every call.
Result<const Driver*> GetDriver();

// "<what>: CUDA_ERROR_X (text)" as a kIoError.
Status DriverError(const Driver& driver, CuResult result, std::string_view what);

}  // namespace carton::gpu::internal
