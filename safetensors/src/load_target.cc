#include "load_target.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace carton::safetensors::internal {
namespace {

void FreeHost(std::byte* p) { std::free(p); }

constexpr std::size_t kHostAlignment = 4096;

// Host memory: plain pages (not page-locked). Staging buffers exist only
// for LoadOptions::host_staged, and copies from them are plain memcpy.
class HostTarget final : public CopyTarget {
 public:
  const std::string& name() const override { return name_; }

  Status Allocate(std::uint64_t bytes) override {
    const std::uint64_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    void* p = rounded >= bytes ? std::aligned_alloc(kHostAlignment, rounded) : nullptr;
    if (p == nullptr) {
      return IoError("cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
    }
    memory_ = std::make_shared<LoadedMemory>();
    memory_->host = {static_cast<std::byte*>(p), FreeHost};
    memory_->size = bytes;
    memory_->address = reinterpret_cast<std::uintptr_t>(p);
    return Status::Ok();
  }
  std::byte* host_destination() override { return memory_->host.get(); }

  Status PrepareStaging(std::size_t count, std::size_t size, unsigned) override {
    staging_.resize(count);
    size_ = size;
    return Status::Ok();
  }
  Result<std::byte*> Staging(std::size_t i) override {
    if (staging_[i].empty()) {
      try {
        staging_[i].resize(size_);
      } catch (const std::bad_alloc&) {
        return IoError("cpu: out of memory allocating a staging buffer of " +
                       std::to_string(size_) + " bytes");
      }
    }
    return staging_[i].data();
  }
  Status WaitStaging(std::size_t) override { return Status::Ok(); }
  Status CopyIn(std::size_t i, std::uint64_t offset, std::size_t size) override {
    if (size != 0) std::memcpy(memory_->host.get() + offset, staging_[i].data(), size);
    return Status::Ok();
  }
  Status Finish() override { return Status::Ok(); }
  std::shared_ptr<LoadedMemory> TakeMemory() override {
    staging_.clear();
    return std::move(memory_);
  }

 private:
  std::string name_ = "cpu";
  std::shared_ptr<LoadedMemory> memory_;
  std::vector<std::vector<std::byte>> staging_;
  std::size_t size_ = 0;
};

// A GPU: page-locked staging buffers, copies on several streams, an event
// per buffer.
class CudaTarget final : public CopyTarget {
 public:
  explicit CudaTarget(gpu::Device device)
      : name_("cuda:" + std::to_string(device.index())), memory_(std::make_shared<LoadedMemory>()) {
    memory_->device.emplace(std::move(device));
  }
  ~CudaTarget() override {
    // Queued copies read the staging buffers and write the destination:
    // they must have run before either is freed.
    (void)Finish();
  }

  const std::string& name() const override { return name_; }

  Status Allocate(std::uint64_t bytes) override {
    // cuMemAlloc aligns to at least 256 bytes; the slack keeps the promise
    // for any driver.
    CARTON_ASSIGN_OR_RETURN(
        memory_->device_memory,
        memory_->device->Allocate(static_cast<std::size_t>(bytes + kLoadAlignment)));
    memory_->size = bytes;
    const std::uint64_t a = memory_->device_memory.address();
    memory_->address = (a + kLoadAlignment - 1) / kLoadAlignment * kLoadAlignment;
    return Status::Ok();
  }
  std::byte* host_destination() override { return nullptr; }

  Status PrepareStaging(std::size_t count, std::size_t size, unsigned streams) override {
    size_ = size;
    staging_.resize(count);
    events_.resize(count);
    recorded_.assign(count, false);
    stream_mu_ = std::vector<std::mutex>(streams);
    for (unsigned s = 0; s < streams; ++s) {
      CARTON_ASSIGN_OR_RETURN(gpu::Stream stream, memory_->device->CreateStream());
      streams_.push_back(std::move(stream));
    }
    return Status::Ok();
  }

  Result<std::byte*> Staging(std::size_t i) override {
    if (staging_[i].data() == nullptr) {
      CARTON_ASSIGN_OR_RETURN(staging_[i], memory_->device->AllocatePinned(size_));
      CARTON_ASSIGN_OR_RETURN(events_[i], memory_->device->CreateEvent());
    }
    return staging_[i].data();
  }

  Status WaitStaging(std::size_t i) override {
    if (!recorded_[i]) return Status::Ok();
    Status s = events_[i].Synchronize();
    if (!s.ok()) return s.WithContext("a copy to the device failed");
    return Status::Ok();
  }

  Status CopyIn(std::size_t i, std::uint64_t offset, std::size_t size) override {
    const std::size_t s = i % streams_.size();
    std::lock_guard lock(stream_mu_[s]);
    if (size != 0) {
      CARTON_RETURN_IF_ERROR(
          streams_[s].CopyToDevice(memory_->address + offset, staging_[i].data(), size));
    }
    CARTON_RETURN_IF_ERROR(streams_[s].Record(events_[i]));
    recorded_[i] = true;
    return Status::Ok();
  }

  Status Finish() override {
    Status first;
    for (gpu::Stream& stream : streams_) {
      Status s = stream.Synchronize();
      if (!s.ok() && first.ok()) first = s.WithContext("a copy to the device failed");
    }
    return first;
  }

  std::shared_ptr<LoadedMemory> TakeMemory() override {
    streams_.clear();
    events_.clear();
    staging_.clear();
    return std::move(memory_);
  }

 private:
  std::string name_;
  std::shared_ptr<LoadedMemory> memory_;  // first: freed after the buffers below
  std::size_t size_ = 0;
  std::vector<gpu::PinnedMemory> staging_;
  std::vector<gpu::Event> events_;
  std::vector<char> recorded_;  // per buffer; each touched by its holder only
  std::vector<std::mutex> stream_mu_;
  std::vector<gpu::Stream> streams_;  // last: destroyed first
};

}  // namespace

std::unique_ptr<CopyTarget> MakeHostTarget() { return std::make_unique<HostTarget>(); }

Result<std::unique_ptr<CopyTarget>> MakeCudaTarget(int index) {
  CARTON_ASSIGN_OR_RETURN(gpu::Device device, gpu::OpenDevice(index));
  return std::unique_ptr<CopyTarget>(std::make_unique<CudaTarget>(std::move(device)));
}

}  // namespace carton::safetensors::internal
