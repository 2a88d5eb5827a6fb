#include "blob_encode.h"

#include <brotli/encode.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"

namespace carton::internal {
namespace {

constexpr std::size_t kChunk = 1 << 20;
// gzip framing for zlib's deflate: window bits 15, plus 16.
constexpr int kGzipWindowBits = 15 + 16;
constexpr int kGzipMemLevel = 8;

using Out = std::function<Status(ByteView)>;

// Feeds `src` in chunks to `update(chunk, last)`.
Status ReadChunks(const std::string& src, const std::function<Status(ByteView, bool)>& update) {
  UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoIoError(errno, src + ": cannot open");
  std::vector<std::byte> buffer(kChunk);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoIoError(errno, src + ": read failed");
    CARTON_RETURN_IF_ERROR(update(ByteView(buffer.data(), static_cast<std::size_t>(n)), n == 0));
    if (n == 0) return Status::Ok();
  }
}

Status Zstd(const std::string& src, const Out& out) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, kBlobZstdLevel)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1))) {
    return Internal("cannot set up a zstd compressor");
  }
  std::vector<std::byte> buffer(ZSTD_CStreamOutSize());
  return ReadChunks(src, [&](ByteView in, bool last) -> Status {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    const ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
    for (;;) {
      ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
      const std::size_t r = ZSTD_compressStream2(cctx.get(), &output, &input, mode);
      if (ZSTD_isError(r)) return Internal(std::string("zstd: ") + ZSTD_getErrorName(r));
      if (output.pos > 0) CARTON_RETURN_IF_ERROR(out(ByteView(buffer.data(), output.pos)));
      if (last ? r == 0 : input.pos == input.size) return Status::Ok();
    }
  });
}

Status Brotli(const std::string& src, const Out& out) {
  std::unique_ptr<BrotliEncoderState, decltype(&BrotliEncoderDestroyInstance)> enc(
      BrotliEncoderCreateInstance(nullptr, nullptr, nullptr), BrotliEncoderDestroyInstance);
  if (!enc || !BrotliEncoderSetParameter(enc.get(), BROTLI_PARAM_QUALITY, kBlobBrotliQuality)) {
    return Internal("cannot set up a brotli compressor");
  }
  return ReadChunks(src, [&](ByteView in, bool last) -> Status {
    std::size_t avail_in = in.size();
    const auto* next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    const BrotliEncoderOperation op = last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
    for (;;) {
      std::size_t avail_out = 0;
      if (!BrotliEncoderCompressStream(enc.get(), op, &avail_in, &next_in, &avail_out, nullptr,
                                       nullptr)) {
        return Internal("brotli compression failed");
      }
      std::size_t size = 0;
      const std::uint8_t* data = BrotliEncoderTakeOutput(enc.get(), &size);
      if (size > 0) {
        CARTON_RETURN_IF_ERROR(out(ByteView(reinterpret_cast<const std::byte*>(data), size)));
      }
      const bool done = last ? BrotliEncoderIsFinished(enc.get())
                             : avail_in == 0 && !BrotliEncoderHasMoreOutput(enc.get());
      if (done) return Status::Ok();
    }
  });
}

Status Gzip(const std::string& src, const Out& out) {
  z_stream z{};
  if (deflateInit2(&z, kBlobGzipLevel, Z_DEFLATED, kGzipWindowBits, kGzipMemLevel,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return Internal("cannot set up a gzip compressor");
  }
  std::unique_ptr<z_stream, decltype(&deflateEnd)> guard(&z, deflateEnd);
  std::vector<std::byte> buffer(kChunk);
  return ReadChunks(src, [&](ByteView in, bool last) -> Status {
    // zlib takes a non-const pointer but does not write through next_in.
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    for (;;) {
      z.next_out = reinterpret_cast<Bytef*>(buffer.data());
      z.avail_out = static_cast<uInt>(buffer.size());
      const int r = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      if (r == Z_STREAM_ERROR) return Internal("gzip compression failed");
      const std::size_t produced = buffer.size() - z.avail_out;
      if (produced > 0) CARTON_RETURN_IF_ERROR(out(ByteView(buffer.data(), produced)));
      if (last ? r == Z_STREAM_END : z.avail_out != 0) return Status::Ok();
    }
  });
}

}  // namespace

Status WriteEncodedCopy(const std::string& src, const std::string& dest, BlobEncoding encoding) {
  CARTON_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(dest));
  const Out out = [&file](ByteView b) { return file.Write(b); };
  Status s;
  switch (encoding) {
    case BlobEncoding::kZstd:
      s = Zstd(src, out);
      break;
    case BlobEncoding::kBrotli:
      s = Brotli(src, out);
      break;
    case BlobEncoding::kGzip:
      s = Gzip(src, out);
      break;
  }
  if (!s.ok()) return s.WithContext(dest);
  return file.Commit();
}

}  // namespace carton::internal

namespace carton {

std::string_view BlobEncodingName(BlobEncoding e) {
  switch (e) {
    case BlobEncoding::kZstd:
      return "zstd";
    case BlobEncoding::kBrotli:
      return "br";
    case BlobEncoding::kGzip:
      return "gzip";
  }
  return "?";
}

std::string_view BlobEncodingSuffix(BlobEncoding e) {
  switch (e) {
    case BlobEncoding::kZstd:
      return ".zst";
    case BlobEncoding::kBrotli:
      return ".br";
    case BlobEncoding::kGzip:
      return ".gz";
  }
  return "";
}

Result<BlobEncoding> ParseBlobEncoding(std::string_view name) {
  for (BlobEncoding e : {BlobEncoding::kZstd, BlobEncoding::kBrotli, BlobEncoding::kGzip}) {
    if (name == BlobEncodingName(e)) return e;
  }
  return InvalidArgument("encoding \"" + std::string(name) + "\" is not zstd, br or gzip");
}

}  // namespace carton
