// Streaming encoders for ZipWriter.

#include <zlib.h>
// For ZSTD_getCParams (a level's parameters), in every libzstd since 1.0.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codec.h"

namespace carton::zip_internal {
namespace {

constexpr std::size_t kOutputChunk = 1 << 20;
// zlib counts in 32-bit uInt; feed it at most this much per call.
constexpr std::size_t kZlibMaxChunk = std::size_t{1} << 30;
constexpr int kDefaultDeflateLevel = 6;
// Level 2 with matches from 4 bytes compresses float32 weights as well as
// level 3 does with them, at about two thirds of the time, and a little
// better than deflate -6 (docs/BENCHMARKS.md).
constexpr int kDefaultZstdLevel = 2;
constexpr unsigned kZstdMinMatch = 4;
// With workers, zstd cuts the input into jobs of this size (a bound on the
// memory every worker holds) and the output does not depend on how many
// workers there are.
constexpr int kZstdJobSize = 2 << 20;

struct DeflateEnd {
  void operator()(z_stream* s) const {
    deflateEnd(s);
    delete s;
  }
};
struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
using ZstdCCtxPtr = std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree>;

// One idle zstd context per thread, kept between entries: with workers, a
// new context starts its threads and allocates its job buffers again,
// which for a folder of small files costs more than compressing them.
// Every encoder resets the parameters it takes over, so the output does not
// depend on what the context compressed before. The idle context keeps its
// workers and buffers (about 20 MiB with 2 workers) until its thread exits.
thread_local ZstdCCtxPtr idle_zstd_cctx;

ZstdCCtxPtr TakeZstdCCtx() {
  if (idle_zstd_cctx) {
    ZstdCCtxPtr c = std::move(idle_zstd_cctx);
    if (!ZSTD_isError(ZSTD_CCtx_reset(c.get(), ZSTD_reset_session_and_parameters))) return c;
  }
  return ZstdCCtxPtr(ZSTD_createCCtx());
}

void ReturnZstdCCtx(ZstdCCtxPtr c) {
  if (c && !idle_zstd_cctx && !ZSTD_isError(ZSTD_CCtx_reset(c.get(), ZSTD_reset_session_only))) {
    idle_zstd_cctx = std::move(c);
  }
}

// Sets `level` on `c` for an input of `size` bytes, with matches from 4
// bytes: float32 and int32 tensors repeat in whole 4-byte values, which the
// faster levels (minimum match 5 to 7) cannot use and deflate (minimum 3)
// does; it also makes those levels faster on such data
// (docs/BENCHMARKS.md).
Status SetZstdLevel(ZSTD_CCtx* c, int level, std::uint64_t size) {
  if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level))) {
    return InvalidArgument("zstd rejects level " + std::to_string(level));
  }
  if (level > 0 && ZSTD_getCParams(level, size, 0).minMatch > kZstdMinMatch &&
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_minMatch, kZstdMinMatch))) {
    return Internal("zstd rejects a minimum match of " + std::to_string(kZstdMinMatch));
  }
  return Status::Ok();
}

class DeflateEncoder final : public Encoder {
 public:
  static Result<std::unique_ptr<Encoder>> Make(int level) {
    std::unique_ptr<z_stream, DeflateEnd> stream;
    auto raw = std::make_unique<z_stream>();
    // Negative window bits: raw deflate, as zip stores it.
    if (deflateInit2(raw.get(), level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return Internal("cannot initialise deflate");
    }
    stream.reset(raw.release());
    return std::unique_ptr<Encoder>(new DeflateEncoder(std::move(stream)));
  }

  Status Update(ByteView in, const ByteSink& out) override {
    while (!in.empty()) {
      std::size_t n = std::min(in.size(), kZlibMaxChunk);
      stream_->next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
      stream_->avail_in = static_cast<uInt>(n);
      CARTON_RETURN_IF_ERROR(Run(Z_NO_FLUSH, out));
      in = in.subspan(n);
    }
    return Status::Ok();
  }

  Status Finish(const ByteSink& out) override { return Run(Z_FINISH, out); }

 private:
  explicit DeflateEncoder(std::unique_ptr<z_stream, DeflateEnd> s)
      : stream_(std::move(s)), buffer_(kOutputChunk) {}

  Status Run(int flush, const ByteSink& out) {
    for (;;) {
      stream_->next_out = reinterpret_cast<Bytef*>(buffer_.data());
      stream_->avail_out = static_cast<uInt>(buffer_.size());
      int r = deflate(stream_.get(), flush);
      if (r == Z_STREAM_ERROR) return Internal("deflate failed");
      std::size_t have = buffer_.size() - stream_->avail_out;
      if (have != 0) CARTON_RETURN_IF_ERROR(out(ByteView(buffer_.data(), have)));
      if (flush == Z_FINISH ? r == Z_STREAM_END : stream_->avail_out != 0) return Status::Ok();
    }
  }

  std::unique_ptr<z_stream, DeflateEnd> stream_;
  std::vector<std::byte> buffer_;
};

class ZstdEncoder final : public Encoder {
 public:
  ~ZstdEncoder() override { ReturnZstdCCtx(std::move(cctx_)); }

  static Result<std::unique_ptr<Encoder>> Make(int level, std::uint64_t size, int workers) {
    ZstdCCtxPtr cctx = TakeZstdCCtx();
    if (!cctx) return Internal("cannot allocate a zstd context");
    CARTON_RETURN_IF_ERROR(SetZstdLevel(cctx.get(), level, size));
    auto set = [&](ZSTD_cParameter p, int v) {
      return !ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), p, v));
    };
    if (workers > 0 && (!set(ZSTD_c_nbWorkers, workers) || !set(ZSTD_c_jobSize, kZstdJobSize))) {
      return InvalidArgument("zstd rejects " + std::to_string(workers) +
                             " workers (built without threads?)");
    }
    if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx.get(), size))) {
      return Internal("zstd rejects the input size " + std::to_string(size));
    }
    return std::unique_ptr<Encoder>(new ZstdEncoder(std::move(cctx), size, workers > 0));
  }

  // With workers, the last byte of the input is held back for Finish, so
  // that the last job always ends the frame. Were it given with
  // ZSTD_e_continue, an input that fills its last job exactly would have
  // that job sent to a worker then or not, depending on whether a worker
  // was free at that moment; when it was, the frame ends with one more,
  // empty block. The output would then differ from run to run.
  Status Update(ByteView in, const ByteSink& out) override {
    if (hold_last_ && !in.empty() && in.size() == size_ - taken_) {
      held_ = in.back();
      held_valid_ = true;
      in = in.first(in.size() - 1);
    }
    taken_ += in.size() + (held_valid_ ? 1 : 0);
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    while (input.pos < input.size) {
      CARTON_RETURN_IF_ERROR(Step(&input, ZSTD_e_continue, out, nullptr));
    }
    return Status::Ok();
  }

  Status Finish(const ByteSink& out) override {
    ZSTD_inBuffer input{held_valid_ ? &held_ : nullptr, held_valid_ ? std::size_t{1} : 0, 0};
    std::size_t remaining = 1;
    while (remaining != 0) CARTON_RETURN_IF_ERROR(Step(&input, ZSTD_e_end, out, &remaining));
    return Status::Ok();
  }

 private:
  ZstdEncoder(ZstdCCtxPtr c, std::uint64_t size, bool hold_last)
      : cctx_(std::move(c)), buffer_(kOutputChunk), size_(size), hold_last_(hold_last) {}
  Status Step(ZSTD_inBuffer* input, ZSTD_EndDirective mode, const ByteSink& out,
              std::size_t* remaining) {
    ZSTD_outBuffer output{buffer_.data(), buffer_.size(), 0};
    std::size_t r = ZSTD_compressStream2(cctx_.get(), &output, input, mode);
    if (ZSTD_isError(r))
      return Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(r));
    if (remaining) *remaining = r;
    if (output.pos != 0) return out(ByteView(buffer_.data(), output.pos));
    return Status::Ok();
  }

  ZstdCCtxPtr cctx_;
  std::vector<std::byte> buffer_;
  const std::uint64_t size_;  // the input's size, as pledged
  const bool hold_last_;
  std::uint64_t taken_ = 0;  // input given so far, the held byte included
  std::byte held_{};
  bool held_valid_ = false;
};

// Independent frames of kZipFrameSize bytes, one after the other: the
// bytes CompressFrames writes with several threads.
class FramesEncoder final : public Encoder {
 public:
  explicit FramesEncoder(ZstdFrameCompressor c) : compressor_(std::move(c)) {}

  Status Update(ByteView in, const ByteSink& out) override {
    while (!in.empty()) {
      const std::size_t n = std::min(in.size(), kFrame - pending_.size());
      pending_.insert(pending_.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
      in = in.subspan(n);
      if (pending_.size() == kFrame) CARTON_RETURN_IF_ERROR(Flush(out));
    }
    return Status::Ok();
  }

  Status Finish(const ByteSink& out) override {
    if (!pending_.empty() || !any_) return Flush(out);
    return Status::Ok();
  }

 private:
  static constexpr std::size_t kFrame = static_cast<std::size_t>(kZipFrameSize);
  Status Flush(const ByteSink& out) {
    CARTON_RETURN_IF_ERROR(compressor_.Compress(pending_, &frame_));
    pending_.clear();
    any_ = true;
    return out(frame_);
  }

  ZstdFrameCompressor compressor_;
  std::vector<std::byte> pending_;
  std::vector<std::byte> frame_;
  bool any_ = false;
};

}  // namespace

struct ZstdFrameCompressor::State {
  ZstdCCtxPtr cctx;
};

Result<ZstdFrameCompressor> ZstdFrameCompressor::Make(int level) {
  auto state = std::make_unique<State>();
  state->cctx.reset(ZSTD_createCCtx());
  if (!state->cctx) return Internal("cannot allocate a zstd context");
  CARTON_RETURN_IF_ERROR(SetZstdLevel(state->cctx.get(), level, kZipFrameSize));
  return ZstdFrameCompressor(std::move(state));
}

ZstdFrameCompressor::ZstdFrameCompressor(std::unique_ptr<State> s) : state_(std::move(s)) {}
ZstdFrameCompressor::ZstdFrameCompressor(ZstdFrameCompressor&&) noexcept = default;
ZstdFrameCompressor& ZstdFrameCompressor::operator=(ZstdFrameCompressor&&) noexcept = default;
ZstdFrameCompressor::~ZstdFrameCompressor() = default;

Status ZstdFrameCompressor::Compress(ByteView in, std::vector<std::byte>* out) {
  out->resize(ZSTD_compressBound(in.size()));
  const std::size_t r =
      ZSTD_compress2(state_->cctx.get(), out->data(), out->size(), in.data(), in.size());
  if (ZSTD_isError(r)) {
    return Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(r));
  }
  out->resize(r);
  return Status::Ok();
}

std::uint64_t ZstdFramesBound(std::uint64_t size) {
  const std::uint64_t full = size / kZipFrameSize;
  const std::uint64_t rest = size % kZipFrameSize;
  return full * ZSTD_compressBound(static_cast<std::size_t>(kZipFrameSize)) +
         (rest != 0 || full == 0 ? ZSTD_compressBound(static_cast<std::size_t>(rest)) : 0);
}

Result<int> ResolveLevel(Compression method, int level) {
  switch (method) {
    case Compression::kStored:
      return 0;
    case Compression::kDeflate:
      if (level == 0) return kDefaultDeflateLevel;
      if (level < 1 || level > 9) {
        return InvalidArgument("deflate level " + std::to_string(level) + " is outside 1..9");
      }
      return level;
    case Compression::kZstd:
      if (level == 0) return kDefaultZstdLevel;
      if (level < ZSTD_minCLevel() || level > kZipMaxZstdLevel) {
        return InvalidArgument("zstd level " + std::to_string(level) + " is outside " +
                               std::to_string(ZSTD_minCLevel()) + ".." +
                               std::to_string(kZipMaxZstdLevel));
      }
      return level;
  }
  return InvalidArgument("unknown compression method");
}

Result<std::unique_ptr<Encoder>> MakeEncoder(Compression method, int level, std::uint64_t size,
                                             int zstd_workers, bool frames) {
  switch (method) {
    case Compression::kDeflate:
      return DeflateEncoder::Make(level);
    case Compression::kZstd:
      if (frames) {
        CARTON_ASSIGN_OR_RETURN(ZstdFrameCompressor c, ZstdFrameCompressor::Make(level));
        return std::unique_ptr<Encoder>(new FramesEncoder(std::move(c)));
      }
      return ZstdEncoder::Make(level, size, zstd_workers);
    case Compression::kStored:
      break;
  }
  return InvalidArgument("stored entries have no encoder");
}

}  // namespace carton::zip_internal
