#include "load_pipeline.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace carton::safetensors::internal {
namespace {

class Pipeline {
 public:
  Pipeline(const LoadPlan& plan, CopyTarget& target) : plan_(plan), target_(target) {}

  Status Execute(const PipelineOptions& options) {
    const std::size_t n = plan_.pieces.size();
    if (n == 0) return target_.Finish();
    const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(options.threads, n));
    if (!options.direct) {
      const unsigned buffers = static_cast<unsigned>(std::min<std::size_t>(options.buffers, n));
      // Buffers no larger than the largest piece: a small load pins little.
      std::uint64_t largest = 1;
      for (const Piece& p : plan_.pieces) largest = std::max(largest, p.size);
      const auto size =
          static_cast<std::size_t>(std::min<std::uint64_t>(largest, options.buffer_size));
      CARTON_RETURN_IF_ERROR(target_.PrepareStaging(buffers, size, options.streams));
      for (unsigned b = 0; b < buffers; ++b) free_.push_back(b);
    }
    auto work = [this, direct = options.direct] { direct ? DirectWorker() : StagedWorker(); };
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t) {
      try {
        workers.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // fewer threads do the work
      }
    }
    work();
    for (std::thread& w : workers) w.join();
    // Every queued copy runs (or fails) before anything is freed.
    Status finished = target_.Finish();
    std::lock_guard lock(mu_);
    return first_.ok() ? finished : first_;
  }

 private:
  const Piece* Next() {
    if (failed_.load()) return nullptr;
    const std::size_t i = next_.fetch_add(1);
    return i < plan_.pieces.size() ? &plan_.pieces[i] : nullptr;
  }

  void Fail(Status s) {
    {
      std::lock_guard lock(mu_);
      if (first_.ok()) first_ = std::move(s);
      failed_ = true;
    }
    // Taken so that a worker between its check and its wait sees the flag.
    { std::lock_guard lock(pool_mu_); }
    pool_cv_.notify_all();
  }

  void DirectWorker() {
    std::vector<std::byte> scratch;
    while (const Piece* p = Next()) {
      Status s = DirectPiece(*p, scratch);
      if (!s.ok()) Fail(std::move(s));
    }
  }

  Status DirectPiece(const Piece& p, std::vector<std::byte>& scratch) {
    std::byte* dst = target_.host_destination() + p.dst;
    const RandomAccessSource& file = *plan_.files[p.file];
    if (p.run_count == 0) return file.ReadAt(p.src, MutableByteView(dst, p.size));
    try {
      scratch.resize(static_cast<std::size_t>(p.size));
    } catch (const std::bad_alloc&) {
      return IoError("cpu: out of memory allocating " + std::to_string(p.size) + " bytes");
    }
    CARTON_RETURN_IF_ERROR(file.ReadAt(p.src, MutableByteView(scratch.data(), p.size)));
    for (std::uint32_t k = 0; k < p.run_count; ++k) {
      const Run& r = plan_.runs[p.first_run + k];
      std::memcpy(dst + (r.dst - p.dst), scratch.data() + (r.src - p.src), r.size);
    }
    return Status::Ok();
  }

  void StagedWorker() {
    while (const Piece* p = Next()) {
      std::size_t buffer = 0;
      if (!Acquire(&buffer)) return;
      Status s = StagedPiece(*p, buffer);
      // A failure is flagged before the buffer goes back, so that no other
      // reader refills a buffer whose copy may still be queued.
      if (!s.ok()) Fail(std::move(s));
      {
        std::lock_guard lock(pool_mu_);
        free_.push_back(buffer);
      }
      pool_cv_.notify_one();
    }
  }

  // Waits for a free staging buffer; false once the load has failed.
  bool Acquire(std::size_t* buffer) {
    std::unique_lock lock(pool_mu_);
    pool_cv_.wait(lock, [this] { return !free_.empty() || failed_.load(); });
    if (failed_.load()) return false;
    // The buffer freed longest ago: its copy has most likely run.
    *buffer = free_.front();
    free_.pop_front();
    return true;
  }

  Status StagedPiece(const Piece& p, std::size_t buffer) {
    // The buffer's previous copy must have run before it is overwritten.
    CARTON_RETURN_IF_ERROR(target_.WaitStaging(buffer));
    CARTON_ASSIGN_OR_RETURN(std::byte * data, target_.Staging(buffer));
    const RandomAccessSource& file = *plan_.files[p.file];
    CARTON_RETURN_IF_ERROR(file.ReadAt(p.src, MutableByteView(data, p.size)));
    // Runs in source order move down (dst - p.dst <= src - p.src), so
    // packing them in place, in order, never overwrites one not yet moved.
    for (std::uint32_t k = 0; k < p.run_count; ++k) {
      const Run& r = plan_.runs[p.first_run + k];
      std::memmove(data + (r.dst - p.dst), data + (r.src - p.src), r.size);
    }
    return target_.CopyIn(buffer, p.dst, static_cast<std::size_t>(p.out_size));
  }

  const LoadPlan& plan_;
  CopyTarget& target_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  Status first_;
  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::deque<std::size_t> free_;
};

}  // namespace

Status RunPipeline(const LoadPlan& plan, CopyTarget& target, const PipelineOptions& options) {
  Pipeline pipeline(plan, target);
  return pipeline.Execute(options);
}

}  // namespace carton::safetensors::internal
