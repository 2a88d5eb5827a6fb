// The seam between the load pipeline (load_pipeline.cc: planning, threads,
// staging buffers, ordering, errors) and where the bytes go: host memory or
// a GPU. Only the targets here touch the destination; the pipeline is the
// same for every target, so it runs in tests against host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "carton/common/status.h"
#include "carton/gpu/gpu.h"
#include "carton/safetensors/load.h"

namespace carton::safetensors::internal {

// The one allocation of a load, shared by the LoadedTensors and every DLPack
// tensor made from it; freed when the last of them goes.
struct LoadedMemory {
  // Declared first so that it is destroyed last: the device memory needs
  // the retained context.
  std::optional<gpu::Device> device;
  gpu::DeviceMemory device_memory;
  std::unique_ptr<std::byte, void (*)(std::byte*)> host{nullptr, nullptr};
  std::uint64_t size = 0;
  std::uint64_t address = 0;  // host pointer or CUdeviceptr of the first byte
};

class CopyTarget {
 public:
  virtual ~CopyTarget() = default;

  // "cpu", "cuda:0"
  virtual const std::string& name() const = 0;
  // Allocates the destination: `bytes` (> 0) aligned to kLoadAlignment.
  virtual Status Allocate(std::uint64_t bytes) = 0;
  // The destination when it is host memory the pipeline may read into
  // directly; nullptr when only CopyIn reaches it.
  virtual std::byte* host_destination() = 0;

  // Up to `count` staging buffers of `size` bytes each, made on first use,
  // copied from on `streams` streams (buffer i on stream i % streams).
  virtual Status PrepareStaging(std::size_t count, std::size_t size, unsigned streams) = 0;
  // Buffer `i`, made now if needed. Called by one thread at a time per i.
  virtual Result<std::byte*> Staging(std::size_t i) = 0;
  // Waits until every copy queued from buffer `i` has run (it may then be
  // refilled). Errors: a failed copy (kIoError).
  virtual Status WaitStaging(std::size_t i) = 0;
  // Queues a copy of the first `size` bytes of buffer `i` to `offset` of
  // the destination; the buffer must not change until WaitStaging(i).
  virtual Status CopyIn(std::size_t i, std::uint64_t offset, std::size_t size) = 0;
  // Waits for every queued copy; the first failure. Called on every path
  // (success or not) before anything is freed.
  virtual Status Finish() = 0;
  // Frees the staging buffers and streams and hands the destination over.
  // REQUIRES: Finish() was called.
  virtual std::shared_ptr<LoadedMemory> TakeMemory() = 0;
};

std::unique_ptr<CopyTarget> MakeHostTarget();
// Errors: those of gpu::OpenDevice.
Result<std::unique_ptr<CopyTarget>> MakeCudaTarget(int index);

}  // namespace carton::safetensors::internal
