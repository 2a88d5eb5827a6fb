// The streaming zstd decoder for ZipReader. The compressed bytes are
// untrusted.

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codec.h"

namespace carton::zip_internal {
namespace {

struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

struct ZstdDecoder::State {
  std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree> dctx;
  std::vector<std::byte> buffer;
  bool fed = false;
  // ZSTD_decompressStream's last hint: 0 when a frame has just ended.
  std::size_t pending = 1;
  int max_window_log = kZipMaxZstdWindowLog;
};

ZstdDecoder::ZstdDecoder(std::unique_ptr<State> state) : state_(std::move(state)) {}
ZstdDecoder::ZstdDecoder(ZstdDecoder&&) noexcept = default;
ZstdDecoder& ZstdDecoder::operator=(ZstdDecoder&&) noexcept = default;
ZstdDecoder::~ZstdDecoder() = default;

Result<ZstdDecoder> ZstdDecoder::Make(std::uint64_t size_hint, int max_window_log) {
  auto state = std::make_unique<State>();
  state->dctx.reset(ZSTD_createDCtx());
  if (!state->dctx) return Internal("cannot allocate a zstd context");
  if (ZSTD_isError(
          ZSTD_DCtx_setParameter(state->dctx.get(), ZSTD_d_windowLogMax, max_window_log))) {
    return Internal("zstd rejects the window limit 2^" + std::to_string(max_window_log));
  }
  state->max_window_log = max_window_log;
  state->buffer.resize(static_cast<std::size_t>(
      std::clamp<std::uint64_t>(size_hint, kMinOutputChunk, kMaxOutputChunk)));
  return ZstdDecoder(std::move(state));
}

Status ZstdDecoder::Update(ByteView in, const ByteSink& out) {
  State& s = *state_;
  if (!in.empty()) s.fed = true;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  for (;;) {
    ZSTD_outBuffer output{s.buffer.data(), s.buffer.size(), 0};
    const std::size_t consumed = input.pos;
    std::size_t r = ZSTD_decompressStream(s.dctx.get(), &output, &input);
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
        return Unsupported("zstd data needs a window larger than " +
                           std::to_string((std::uint64_t{1} << s.max_window_log) >> 20) +
                           " MiB (the reader's max_zstd_window_log)");
      }
      return Corrupt(std::string("invalid zstd data: ") + ZSTD_getErrorName(r));
    }
    // A call that neither reads nor writes (flushing after a full buffer)
    // answers for the next frame; keep the hint of the one that ended.
    if (input.pos != consumed || output.pos != 0) s.pending = r;
    if (output.pos != 0) CARTON_RETURN_IF_ERROR(out(ByteView(s.buffer.data(), output.pos)));
    // A buffer that was not filled means zstd holds no more output for the
    // input given so far.
    if (input.pos == input.size && output.pos < output.size) return Status::Ok();
  }
}

Status ZstdDecoder::Finish() const {
  if (!state_->fed) return Corrupt("zstd data is empty");
  if (state_->pending != 0) return Corrupt("zstd data is truncated");
  return Status::Ok();
}

}  // namespace carton::zip_internal
