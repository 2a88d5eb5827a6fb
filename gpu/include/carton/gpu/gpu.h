// NVIDIA GPUs through the CUDA driver library, opened at run time.
//
// Nothing of CUDA is needed to build: the first call opens `libcuda.so.1`
// (or the library the CARTON_LIBCUDA environment variable names) and looks
// up the few entry points used, by name. A machine without the library, or
// without a GPU, gets a Status, never a crash.
//
// Ownership: every type here is a move-only owner of one driver object
// (device memory, page-locked host memory, a stream, an event, a retained
// primary context) and releases it in its destructor. A Device must outlive
// every buffer, stream and event made from it. Every call here, destructors
// included, makes the device's context current on the calling thread for
// its duration and then puts back the context that thread had: a caller's
// thread (Python's, a consumer's running a DLPack deleter) keeps its own.
//
// Thread-safety: ListGpus and OpenDevice are safe from any thread. One
// Stream is used by one thread at a time; distinct objects are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "carton/common/status.h"

namespace carton::gpu {

// One GPU as the driver lists it.
struct GpuInfo {
  // The driver's ordinal, among the GPUs CUDA_VISIBLE_DEVICES leaves
  // visible, in the driver's order (fastest first, unless
  // CUDA_DEVICE_ORDER=PCI_BUS_ID: then nvidia-smi's).
  int index = 0;
  std::string name;            // "NVIDIA H200"
  std::string uuid;            // "GPU-8c6d5f29-..." (the form nvidia-smi -L prints)
  std::uint64_t total_memory;  // bytes
};

// Whether the driver library can be opened and initialized; `why` (when
// not null) receives the reason it cannot: "cannot open libcuda.so.1: ..."
// or "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
bool DriverAvailable(std::string* why = nullptr);

// The GPUs the driver sees, in ordinal order; empty when the driver reports
// none. Errors: kUnsupported when the driver library cannot be opened or a
// needed entry point is missing (the message says which); kIoError when
// the driver fails a call (with the driver's error name).
Result<std::vector<GpuInfo>> ListGpus();

class Device;

namespace internal {
// Which device an object belongs to: its ordinal and retained primary
// context (a CUcontext), copied into each object so that a Device may move.
struct DeviceRef {
  int index = -1;
  void* context = nullptr;
};
}  // namespace internal

// Device memory: one cuMemAlloc'd range.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  ~DeviceMemory();

  std::uint64_t address() const { return address_; }  // a CUdeviceptr
  std::size_t size() const { return size_; }
  // Gives up ownership: the caller frees it with Device::Free.
  std::uint64_t Release();

 private:
  friend class Device;
  std::uint64_t address_ = 0;
  std::size_t size_ = 0;
  internal::DeviceRef device_;
};

// Page-locked host memory (cuMemHostAlloc, portable), for copies that run
// asynchronously at the link's speed.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  PinnedMemory(PinnedMemory&& other) noexcept;
  PinnedMemory& operator=(PinnedMemory&& other) noexcept;
  ~PinnedMemory();

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  friend class Device;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  internal::DeviceRef device_;
};

// A completion marker recorded on a stream.
class Event {
 public:
  Event() = default;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  ~Event();

  // Waits until the work before the last Record has finished. Errors:
  // kIoError with the driver's error (a failed asynchronous copy shows here).
  Status Synchronize() const;

 private:
  friend class Device;
  friend class Stream;
  void* event_ = nullptr;  // a CUevent
  internal::DeviceRef device_;
};

// An asynchronous queue of copies to one device.
class Stream {
 public:
  Stream() = default;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  ~Stream();

  // Queues a copy of `size` bytes from host memory `source` (pinned, for the
  // copy to be asynchronous) to device address `destination`. `source` must
  // stay valid and unchanged until the copy has run (an Event recorded after
  // it has completed).
  Status CopyToDevice(std::uint64_t destination, const std::byte* source, std::size_t size);
  // Marks the work queued so far; `event` completes when it has run.
  Status Record(Event& event);
  // Waits until everything queued has run.
  Status Synchronize();

 private:
  friend class Device;
  void* stream_ = nullptr;  // a CUstream
  internal::DeviceRef device_;
};

// One GPU, its primary context retained.
class Device {
 public:
  Device(Device&& other) noexcept;
  Device& operator=(Device&& other) = delete;
  ~Device();

  int index() const { return index_; }

  // Errors: kIoError; an allocation the device cannot hold says
  // "cuda:N: out of memory allocating B bytes (F bytes free)".
  Result<DeviceMemory> Allocate(std::size_t size) const;
  Result<PinnedMemory> AllocatePinned(std::size_t size) const;
  Result<Stream> CreateStream() const;
  Result<Event> CreateEvent() const;
  // Copies `size` bytes from the device to host memory, synchronously (for
  // checks and tests).
  Status CopyToHost(std::byte* destination, std::uint64_t source, std::size_t size) const;
  // Frees memory given up by DeviceMemory::Release.
  Status Free(std::uint64_t address) const;

 private:
  friend Result<Device> OpenDevice(int index);
  Device(int index, int handle, void* context)
      : index_(index), handle_(handle), context_(context) {}
  int index_;
  int handle_;     // a CUdevice
  void* context_;  // the retained primary CUcontext; null once moved from
  internal::DeviceRef Ref() const { return {index_, context_}; }
};

// Opens GPU `index` (an ordinal as ListGpus gives). Errors: kUnsupported
// when there is no driver; kNotFound "cuda:N: no such GPU (M found)".
Result<Device> OpenDevice(int index);

}  // namespace carton::gpu
