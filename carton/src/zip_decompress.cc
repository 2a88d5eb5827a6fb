// Streaming decoders for ZipReader. The compressed bytes are untrusted.

#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <string>
#include <vector>

#include "zip_codec.h"

namespace carton::zip_codec {
namespace {

constexpr std::size_t kMinOutputChunk = 4096;
constexpr std::size_t kMaxOutputChunk = 1 << 20;
constexpr std::size_t kZlibMaxChunk = std::size_t{1} << 30;

std::size_t OutputChunk(std::uint64_t size_hint) {
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(size_hint, kMinOutputChunk, kMaxOutputChunk));
}

struct InflateEnd {
  void operator()(z_stream* s) const {
    inflateEnd(s);
    delete s;
  }
};
struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

Status Inflate(ByteView in, std::uint64_t size_hint, const ByteSink& out) {
  auto raw = std::make_unique<z_stream>();
  if (inflateInit2(raw.get(), -MAX_WBITS) != Z_OK)
    return Internal("cannot initialise inflate");
  std::unique_ptr<z_stream, InflateEnd> stream(raw.release());
  std::vector<std::byte> buffer(OutputChunk(size_hint));
  std::size_t fed = 0;
  for (;;) {
    if (stream->avail_in == 0 && fed < in.size()) {
      std::size_t n = std::min(in.size() - fed, kZlibMaxChunk);
      stream->next_in =
          reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + fed));
      stream->avail_in = static_cast<uInt>(n);
      fed += n;
    }
    stream->next_out = reinterpret_cast<Bytef*>(buffer.data());
    stream->avail_out = static_cast<uInt>(buffer.size());
    int r = inflate(stream.get(), Z_NO_FLUSH);
    std::size_t have = buffer.size() - stream->avail_out;
    if (r == Z_DATA_ERROR) {
      return Corrupt(std::string("invalid deflate data: ") +
                     (stream->msg ? stream->msg : "?"));
    }
    if (r == Z_MEM_ERROR) return Internal("inflate ran out of memory");
    if (have != 0) CARTON_RETURN_IF_ERROR(out(ByteView(buffer.data(), have)));
    if (r == Z_STREAM_END) break;
    bool input_done = stream->avail_in == 0 && fed == in.size();
    if (r == Z_BUF_ERROR || (r == Z_OK && input_done && have == 0)) {
      // No progress is possible: the input ended inside the stream.
      if (input_done) return Corrupt("deflate data is truncated");
      return Internal("inflate made no progress");
    }
    if (r != Z_OK) return Corrupt("inflate failed (" + std::to_string(r) + ")");
  }
  std::size_t left = stream->avail_in + (in.size() - fed);
  if (left != 0) {
    return Corrupt(std::to_string(left) +
                   " bytes follow the end of the deflate data");
  }
  return Status::Ok();
}

Status DecompressZstd(ByteView in, std::uint64_t size_hint,
                      const ByteSink& out) {
  if (in.empty()) return Corrupt("zstd data is empty");
  std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree> dctx(ZSTD_createDCtx());
  if (!dctx) return Internal("cannot allocate a zstd context");
  if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax,
                                          kZstdMaxWindowLog))) {
    return Internal("zstd rejects the window limit");
  }
  std::vector<std::byte> buffer(OutputChunk(size_hint));
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  for (;;) {
    ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
    std::size_t r = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
        return Unsupported("zstd data needs a window larger than " +
                           std::to_string((1u << kZstdMaxWindowLog) >> 20) +
                           " MiB");
      }
      return Corrupt(std::string("invalid zstd data: ") + ZSTD_getErrorName(r));
    }
    if (output.pos != 0)
      CARTON_RETURN_IF_ERROR(out(ByteView(buffer.data(), output.pos)));
    // r == 0: a frame just ended and its output is flushed.
    if (r == 0 && input.pos == input.size) return Status::Ok();
    if (r != 0 && input.pos == input.size && output.pos < output.size) {
      return Corrupt("zstd data is truncated");
    }
  }
}

}  // namespace carton::zip_codec
