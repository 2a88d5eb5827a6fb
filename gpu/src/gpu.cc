#include "carton/gpu/gpu.h"

#include <string>
#include <utility>

#include "driver.h"
#include "uuid.h"

namespace carton::gpu {

using internal::CuContext;
using internal::CuDevice;
using internal::CuDevicePtr;
using internal::CuEvent;
using internal::CuResult;
using internal::CuStream;
using internal::Driver;
using internal::DriverError;
using internal::GetDriver;
using internal::kCudaSuccess;

namespace {

// The driver; only called where a Device exists, so it has opened.
const Driver& D() { return *GetDriver().value(); }

std::string Name(int index) { return "cuda:" + std::to_string(index); }

Result<GpuInfo> Describe(const Driver& d, int ordinal) {
  CuDevice device = 0;
  CuResult result = d.DeviceGet(&device, ordinal);
  if (result != kCudaSuccess) return DriverError(d, result, Name(ordinal) + ": cuDeviceGet");
  GpuInfo info;
  info.index = ordinal;
  char name[256] = {};
  result = d.DeviceGetName(name, sizeof(name) - 1, device);
  if (result != kCudaSuccess) return DriverError(d, result, Name(ordinal) + ": cuDeviceGetName");
  info.name = name;
  internal::CuUuid uuid{};
  result = d.DeviceGetUuid(&uuid, device);
  if (result != kCudaSuccess) return DriverError(d, result, Name(ordinal) + ": cuDeviceGetUuid");
  info.uuid = internal::UuidText(uuid);
  std::size_t total = 0;
  result = d.DeviceTotalMem(&total, device);
  if (result != kCudaSuccess) return DriverError(d, result, Name(ordinal) + ": cuDeviceTotalMem");
  info.total_memory = total;
  return info;
}

// Makes a device's context current on this thread for one call and then
// puts back the thread's own (cuCtxSetCurrent, not push/pop: a context
// current elsewhere may also be made current here).
class ScopedContext {
 public:
  explicit ScopedContext(const internal::DeviceRef& device) {
    CuResult result = D().CtxGetCurrent(&previous_);
    if (result != kCudaSuccess) {
      status_ = DriverError(D(), result, Name(device.index) + ": cuCtxGetCurrent");
      return;
    }
    if (previous_ == static_cast<CuContext>(device.context)) return;
    result = D().CtxSetCurrent(static_cast<CuContext>(device.context));
    if (result != kCudaSuccess) {
      status_ = DriverError(D(), result, Name(device.index) + ": cuCtxSetCurrent");
      return;
    }
    restore_ = true;
  }
  ~ScopedContext() {
    if (restore_) D().CtxSetCurrent(previous_);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

  // Whether the context could be made current.
  const Status& status() const { return status_; }

 private:
  Status status_;
  CuContext previous_ = nullptr;
  bool restore_ = false;
};

Result<int> Count(const Driver& d) {
  int count = 0;
  const CuResult result = d.DeviceGetCount(&count);
  if (result != kCudaSuccess) return DriverError(d, result, "cuDeviceGetCount");
  return count;
}

}  // namespace

bool DriverAvailable(std::string* why) {
  auto driver = GetDriver();
  if (!driver.ok() && why != nullptr) *why = driver.status().message();
  return driver.ok();
}

Result<std::vector<GpuInfo>> ListGpus() {
  CARTON_ASSIGN_OR_RETURN(const Driver* d, GetDriver());
  CARTON_ASSIGN_OR_RETURN(int count, Count(*d));
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    CARTON_ASSIGN_OR_RETURN(GpuInfo info, Describe(*d, i));
    gpus.push_back(std::move(info));
  }
  return gpus;
}

// --- DeviceMemory ---------------------------------------------------------

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)),
      device_(other.device_) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    DeviceMemory old(std::move(*this));
    address_ = std::exchange(other.address_, 0);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (address_ != 0) {
    ScopedContext current(device_);
    D().MemFree(static_cast<CuDevicePtr>(address_));
  }
}

std::uint64_t DeviceMemory::Release() {
  size_ = 0;
  return std::exchange(address_, 0);
}

// --- PinnedMemory ---------------------------------------------------------

PinnedMemory::PinnedMemory(PinnedMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      device_(other.device_) {}

PinnedMemory& PinnedMemory::operator=(PinnedMemory&& other) noexcept {
  if (this != &other) {
    PinnedMemory old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
  }
  return *this;
}

PinnedMemory::~PinnedMemory() {
  if (data_ == nullptr) return;
  ScopedContext current(device_);
  D().MemFreeHost(data_);
}

// --- Event ----------------------------------------------------------------

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

Event::~Event() {
  if (event_ == nullptr) return;
  ScopedContext current(device_);
  D().EventDestroy(static_cast<CuEvent>(event_));
}

Status Event::Synchronize() const {
  ScopedContext current(device_);
  CARTON_RETURN_IF_ERROR(current.status());
  const CuResult result = D().EventSynchronize(static_cast<CuEvent>(event_));
  if (result != kCudaSuccess) return DriverError(D(), result, Name(device_.index));
  return Status::Ok();
}

// --- Stream ---------------------------------------------------------------

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

Stream::~Stream() {
  if (stream_ == nullptr) return;
  ScopedContext current(device_);
  D().StreamSynchronize(static_cast<CuStream>(stream_));
  D().StreamDestroy(static_cast<CuStream>(stream_));
}

Status Stream::CopyToDevice(std::uint64_t destination, const std::byte* source, std::size_t size) {
  ScopedContext current(device_);
  CARTON_RETURN_IF_ERROR(current.status());
  const CuResult result = D().MemcpyHtoDAsync(static_cast<CuDevicePtr>(destination), source, size,
                                              static_cast<CuStream>(stream_));
  if (result != kCudaSuccess) {
    return DriverError(D(), result, Name(device_.index) + ": copy to the device");
  }
  return Status::Ok();
}

Status Stream::Record(Event& event) {
  ScopedContext current(device_);
  CARTON_RETURN_IF_ERROR(current.status());
  const CuResult result =
      D().EventRecord(static_cast<CuEvent>(event.event_), static_cast<CuStream>(stream_));
  if (result != kCudaSuccess) return DriverError(D(), result, Name(device_.index));
  return Status::Ok();
}

Status Stream::Synchronize() {
  ScopedContext current(device_);
  CARTON_RETURN_IF_ERROR(current.status());
  const CuResult result = D().StreamSynchronize(static_cast<CuStream>(stream_));
  if (result != kCudaSuccess) return DriverError(D(), result, Name(device_.index));
  return Status::Ok();
}

// --- Device ---------------------------------------------------------------

Result<Device> OpenDevice(int index) {
  CARTON_ASSIGN_OR_RETURN(const Driver* d, GetDriver());
  CARTON_ASSIGN_OR_RETURN(int count, Count(*d));
  if (index < 0 || index >= count) {
    return NotFound(Name(index) + ": no such GPU (" + std::to_string(count) + " found)");
  }
  CuDevice handle = 0;
  CuResult result = d->DeviceGet(&handle, index);
  if (result != kCudaSuccess) return DriverError(*d, result, Name(index) + ": cuDeviceGet");
  CuContext context = nullptr;
  result = d->DevicePrimaryCtxRetain(&context, handle);
  if (result != kCudaSuccess)
    return DriverError(*d, result, Name(index) + ": cuDevicePrimaryCtxRetain");
  return Device(index, handle, context);
}

Device::Device(Device&& other) noexcept
    : index_(other.index_),
      handle_(other.handle_),
      context_(std::exchange(other.context_, nullptr)) {}

Device::~Device() {
  if (context_ != nullptr) D().DevicePrimaryCtxRelease(handle_);
}

Result<DeviceMemory> Device::Allocate(std::size_t size) const {
  ScopedContext current(Ref());
  CARTON_RETURN_IF_ERROR(current.status());
  CuDevicePtr address = 0;
  const CuResult result = D().MemAlloc(&address, size == 0 ? 1 : size);
  if (result == internal::kCudaErrorOutOfMemory) {
    std::size_t free = 0;
    std::size_t total = 0;
    D().MemGetInfo(&free, &total);
    return IoError(Name(index_) + ": out of memory allocating " + std::to_string(size) +
                   " bytes (" + std::to_string(free) + " bytes free)");
  }
  if (result != kCudaSuccess) return DriverError(D(), result, Name(index_) + ": cuMemAlloc");
  DeviceMemory memory;
  memory.address_ = address;
  memory.size_ = size;
  memory.device_ = Ref();
  return memory;
}

Result<PinnedMemory> Device::AllocatePinned(std::size_t size) const {
  ScopedContext current(Ref());
  CARTON_RETURN_IF_ERROR(current.status());
  void* data = nullptr;
  const CuResult result =
      D().MemHostAlloc(&data, size == 0 ? 1 : size, internal::kMemHostAllocPortable);
  if (result != kCudaSuccess) {
    return DriverError(D(), result,
                       "allocating " + std::to_string(size) + " bytes of pinned memory");
  }
  PinnedMemory memory;
  memory.data_ = static_cast<std::byte*>(data);
  memory.size_ = size;
  memory.device_ = Ref();
  return memory;
}

Result<Stream> Device::CreateStream() const {
  ScopedContext current(Ref());
  CARTON_RETURN_IF_ERROR(current.status());
  CuStream stream = nullptr;
  const CuResult result = D().StreamCreate(&stream, internal::kStreamNonBlocking);
  if (result != kCudaSuccess) return DriverError(D(), result, Name(index_) + ": cuStreamCreate");
  Stream out;
  out.stream_ = stream;
  out.device_ = Ref();
  return out;
}

Result<Event> Device::CreateEvent() const {
  ScopedContext current(Ref());
  CARTON_RETURN_IF_ERROR(current.status());
  CuEvent event = nullptr;
  const CuResult result = D().EventCreate(&event, internal::kEventDisableTiming);
  if (result != kCudaSuccess) return DriverError(D(), result, Name(index_) + ": cuEventCreate");
  Event out;
  out.event_ = event;
  out.device_ = Ref();
  return out;
}

Status Device::CopyToHost(std::byte* destination, std::uint64_t source, std::size_t size) const {
  ScopedContext current(Ref());
  CARTON_RETURN_IF_ERROR(current.status());
  const CuResult result = D().MemcpyDtoH(destination, static_cast<CuDevicePtr>(source), size);
  if (result != kCudaSuccess) return DriverError(D(), result, Name(index_) + ": copy to the host");
  return Status::Ok();
}

Status Device::Free(std::uint64_t address) const {
  ScopedContext current(Ref());
  const CuResult result = D().MemFree(static_cast<CuDevicePtr>(address));
  if (result != kCudaSuccess) return DriverError(D(), result, Name(index_) + ": cuMemFree");
  return Status::Ok();
}

}  // namespace carton::gpu
