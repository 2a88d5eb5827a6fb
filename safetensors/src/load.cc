#include "carton/safetensors/load.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "carton/common/pread_file.h"
#include "carton/common/quote.h"
#include "load_pipeline.h"
#include "load_plan.h"
#include "load_target.h"

namespace carton::safetensors {

using internal::LoadedMemory;

std::string Target::ToString() const {
  return kind == Kind::kHost ? std::string("cpu") : "cuda:" + std::to_string(index);
}

LoadedTensors::LoadedTensors(Target target, std::vector<LoadedTensor> tensors,
                             std::shared_ptr<LoadedMemory> memory)
    : target_(target), tensors_(std::move(tensors)), memory_(std::move(memory)) {}
LoadedTensors::LoadedTensors(LoadedTensors&&) noexcept = default;
LoadedTensors& LoadedTensors::operator=(LoadedTensors&&) noexcept = default;
LoadedTensors::~LoadedTensors() = default;

const LoadedTensor* LoadedTensors::Find(std::string_view name) const {
  for (const LoadedTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::uint64_t LoadedTensors::allocation_size() const { return memory_->size; }

std::span<const std::byte> LoadedTensors::HostBytes(const LoadedTensor& tensor) const {
  if (memory_->host == nullptr) return {};
  return {memory_->host.get() + tensor.offset, static_cast<std::size_t>(tensor.byte_size)};
}

Result<std::vector<std::byte>> LoadedTensors::CopyToHost(const LoadedTensor& tensor) const {
  std::vector<std::byte> out(static_cast<std::size_t>(tensor.byte_size));
  if (memory_->host != nullptr) {
    std::copy_n(memory_->host.get() + tensor.offset, out.size(), out.data());
    return out;
  }
  if (!out.empty()) {
    CARTON_RETURN_IF_ERROR(memory_->device->CopyToHost(out.data(), tensor.address, out.size()));
  }
  return out;
}

Result<std::shared_ptr<const RandomAccessSource>> OpenPreadFile(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(std::shared_ptr<PreadFile> file, PreadFile::Open(path));
  return std::shared_ptr<const RandomAccessSource>(std::move(file));
}

namespace {

Status CheckOptions(const LoadOptions& options) {
  if (options.staging_buffer_size < 4096) {
    return InvalidArgument("load: staging_buffer_size of " +
                           std::to_string(options.staging_buffer_size) +
                           " bytes is under the minimum of 4096");
  }
  if (options.streams == 0) return InvalidArgument("load: streams must be at least 1");
  return Status::Ok();
}

internal::PipelineOptions PipelineOptionsFor(const LoadOptions& options, const Target& target) {
  internal::PipelineOptions p;
  p.threads = options.threads != 0 ? options.threads
                                   : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  p.buffer_size = options.staging_buffer_size;
  p.buffers = options.staging_buffers != 0 ? options.staging_buffers : p.threads + 2;
  p.streams = options.streams;
  p.direct = target.kind == Target::Kind::kHost && !options.host_staged;
  return p;
}

Result<std::unique_ptr<internal::CopyTarget>> MakeTarget(const Target& target) {
  if (target.kind == Target::Kind::kHost) return internal::MakeHostTarget();
  return internal::MakeCudaTarget(target.index);
}

}  // namespace

Result<LoadedTensors> Load(const LoadRequest& request, const Target& target,
                           const LoadOptions& options) {
  CARTON_RETURN_IF_ERROR(CheckOptions(options));
  const internal::PipelineOptions pipeline = PipelineOptionsFor(options, target);
  CARTON_ASSIGN_OR_RETURN(internal::LoadPlan plan,
                          internal::PlanLoad(request, options, pipeline.buffer_size));
  CARTON_ASSIGN_OR_RETURN(std::unique_ptr<internal::CopyTarget> copy, MakeTarget(target));
  CARTON_RETURN_IF_ERROR(copy->Allocate(plan.total));
  CARTON_RETURN_IF_ERROR(internal::RunPipeline(plan, *copy, pipeline));
  for (const auto& source : plan.own_sources) CARTON_RETURN_IF_ERROR(source->CheckUnchanged());
  std::shared_ptr<LoadedMemory> memory = copy->TakeMemory();
  for (LoadedTensor& t : plan.tensors) t.address = memory->address + t.offset;
  return LoadedTensors(target, std::move(plan.tensors), std::move(memory));
}

}  // namespace carton::safetensors
