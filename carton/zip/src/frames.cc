#include "frames.h"

#include <zlib.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "carton/common/fd_io.h"
#include "carton/zip/compression.h"
#include "codec.h"
#include "records.h"

namespace carton::zip_internal {
namespace {

constexpr std::size_t kFrame = static_cast<std::size_t>(kZipFrameSize);

// "entry "<name>": <path>", the start of every message about `in`.
std::string Context(const FramesInput& in) {
  return "entry " + QuoteName(in.name) + ": " + in.path;
}

Status ChangedSize(const FramesInput& in) {
  return IoError(Context(in) + " changed size while being read (expected " +
                 std::to_string(in.size) + " bytes)");
}

class FramesRun {
 public:
  FramesRun(const FramesInput& in, const FramesOutput& out)
      : in_(in), out_(out), frames_(static_cast<std::size_t>((in.size + kFrame - 1) / kFrame)) {}

  // Compresses frames until none is left or one failed.
  void Worker() {
    auto compressor = ZstdFrameCompressor::Make(in_.level);
    if (!compressor.ok()) return Fail(compressor.status().WithContext(Context(in_)));
    std::vector<std::byte> input(kFrame), output;
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (failed_ || next_take_ == frames_) return;
        i = next_take_++;
      }
      Status s = Frame(i, *compressor, input, output);
      if (!s.ok()) return Fail(std::move(s));
    }
  }

  // Until every frame is written or one failed, hands the input bytes of
  // the frames placed since the last call to `on_read`.
  void Report(const std::function<void(std::uint64_t)>& on_read) {
    std::uint64_t reported = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return failed_ || written_ == frames_ || placed_input_ != reported; });
      const std::uint64_t delta = placed_input_ - reported;
      reported = placed_input_;
      const bool done = failed_ || written_ == frames_;
      if (delta != 0 && on_read) {
        lock.unlock();
        on_read(delta);
        lock.lock();
      }
      if (done) return;
    }
  }

  void Fail(Status s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.ok()) error_ = std::move(s);
      failed_ = true;
    }
    cv_.notify_all();
  }

  carton::Result<FramesResult> Outcome() const {
    if (!error_.ok()) return error_;
    return FramesResult{placed_, crc_};
  }

  std::size_t frames() const { return frames_; }

 private:
  Status ReadFrame(std::size_t i, std::vector<std::byte>& input, std::size_t* len) const {
    const std::uint64_t offset = std::uint64_t{i} * kFrame;
    *len = static_cast<std::size_t>(std::min<std::uint64_t>(kFrame, in_.size - offset));
    CARTON_ASSIGN_OR_RETURN(std::size_t got,
                            PreadFull(in_.fd, offset, {input.data(), *len}, Context(in_)));
    if (got != *len) return ChangedSize(in_);
    return Status::Ok();
  }

  // Reads, compresses and writes frame `i`, once the frames before it have
  // their places.
  Status Frame(std::size_t i, ZstdFrameCompressor& compressor, std::vector<std::byte>& input,
               std::vector<std::byte>& output) {
    std::size_t len = 0;
    CARTON_RETURN_IF_ERROR(ReadFrame(i, input, &len));
    const ByteView view(input.data(), len);
    const std::uint32_t crc = UpdateCrc32(0, view);
    if (Status s = compressor.Compress(view, &output); !s.ok()) return s.WithContext(Context(in_));
    std::uint64_t at;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return failed_ || next_place_ == i; });
      if (failed_) return Status::Ok();  // the first error is kept
      at = placed_;
      placed_ += output.size();
      crc_ = static_cast<std::uint32_t>(crc32_combine(crc_, crc, static_cast<z_off_t>(len)));
      placed_input_ += len;
      ++next_place_;
    }
    cv_.notify_all();
    CARTON_RETURN_IF_ERROR(PwriteFull(out_.fd, out_.offset + at, output,
                                      "entry " + QuoteName(in_.name) + ": " + out_.path));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++written_;
    }
    cv_.notify_all();
    return Status::Ok();
  }

  const FramesInput& in_;
  const FramesOutput& out_;
  const std::size_t frames_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t next_take_ = 0;
  std::size_t next_place_ = 0;
  std::size_t written_ = 0;
  std::uint64_t placed_ = 0;        // compressed bytes of the frames placed
  std::uint64_t placed_input_ = 0;  // their input bytes
  std::uint32_t crc_ = 0;
  bool failed_ = false;
  Status error_;
};

// Whether the file holds more than `in.size` bytes now.
Status CheckNoGrowth(const FramesInput& in) {
  std::byte extra;
  CARTON_ASSIGN_OR_RETURN(std::size_t got, PreadFull(in.fd, in.size, {&extra, 1}, Context(in)));
  if (got != 0) return ChangedSize(in);
  return Status::Ok();
}

}  // namespace

Result<FramesResult> CompressFrames(const FramesInput& in, const FramesOutput& out,
                                    unsigned threads,
                                    const std::function<void(std::uint64_t)>& on_read) {
  if (in.size == 0) return Internal("entry " + QuoteName(in.name) + ": no frames to compress");
  FramesRun run(in, out);
  const auto n = std::max<std::size_t>(1, std::min<std::size_t>(threads, run.frames()));
  std::vector<std::jthread> workers;
  try {
    for (std::size_t t = 0; t < n; ++t) workers.emplace_back([&run] { run.Worker(); });
  } catch (const std::system_error&) {
    if (workers.empty()) run.Worker();  // no thread to spare: compress here
  }
  run.Report(on_read);
  for (auto& w : workers) w.join();
  CARTON_ASSIGN_OR_RETURN(FramesResult r, run.Outcome());
  CARTON_RETURN_IF_ERROR(CheckNoGrowth(in));
  return r;
}

}  // namespace carton::zip_internal
