// A ModelPack layer blob read as a stream: as is, gunzipped (every gzip
// member, as gzip -d does) or un-zstd'ed (every frame), hashed as it is
// handed out. zlib and zstd stay in this file.
#include "layer_stream.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"

namespace carton::oci::internal {
namespace {

constexpr std::size_t kInputSize = std::size_t{256} << 10;
// zstd's own default for decoders (a larger window needs --long=N).
constexpr int kMaxZstdWindowLog = 27;

struct ZstdFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

class FileLayerStream final : public LayerStream {
 public:
  FileLayerStream(UniqueFd fd, LayerCompression compression, std::string where)
      : fd_(std::move(fd)), compression_(compression), where_(std::move(where)) {}
  ~FileLayerStream() override {
    if (zlib_ready_) inflateEnd(&zlib_);
  }

  Status Init() {
    input_.resize(kInputSize);
    if (compression_ == LayerCompression::kGzip) {
      zlib_ = z_stream{};
      // 16 + 15: a gzip wrapper only, the largest window.
      if (inflateInit2(&zlib_, 16 + MAX_WBITS) != Z_OK) return Internal("inflateInit2 failed");
      zlib_ready_ = true;
    } else if (compression_ == LayerCompression::kZstd) {
      zstd_.reset(ZSTD_createDCtx());
      if (!zstd_) return Internal("ZSTD_createDCtx failed");
      ZSTD_DCtx_setParameter(zstd_.get(), ZSTD_d_windowLogMax, kMaxZstdWindowLog);
    }
    return Status::Ok();
  }

  Result<std::size_t> Read(MutableByteView out) override {
    Result<std::size_t> n = ReadDecoded(out);
    if (n.ok()) hash_.Update(ByteView(out.data(), *n));
    return n;
  }

  manifest::Digest FinishHash() override { return hash_.Finish(); }

 private:
  // Refills the input buffer when it is used up; false at the file's end.
  Result<bool> Fill() {
    if (input_pos_ < input_len_) return true;
    for (;;) {
      const ssize_t r = ::read(fd_.get(), input_.data(), input_.size());
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoIoError(errno, where_ + ": reading the blob");
      input_pos_ = 0;
      input_len_ = static_cast<std::size_t>(r);
      return r > 0;
    }
  }

  Result<std::size_t> ReadDecoded(MutableByteView out) {
    if (out.empty()) return std::size_t{0};
    switch (compression_) {
      case LayerCompression::kNone:
        return ReadPlain(out);
      case LayerCompression::kGzip:
        return ReadGzip(out);
      case LayerCompression::kZstd:
        return ReadZstd(out);
    }
    return Internal("unknown compression");
  }

  Result<std::size_t> ReadPlain(MutableByteView out) {
    CARTON_ASSIGN_OR_RETURN(const bool more, Fill());
    if (!more) return std::size_t{0};
    const std::size_t n = std::min(out.size(), input_len_ - input_pos_);
    std::copy_n(input_.data() + input_pos_, n, out.data());
    input_pos_ += n;
    return n;
  }

  // Decoders may still hold output when the file's bytes are all read
  // (a long match, a full output buffer), so they run on empty input too;
  // only a call that makes no progress at the end means a truncated stream.
  Result<std::size_t> ReadGzip(MutableByteView out) {
    zlib_.next_out = reinterpret_cast<Bytef*>(out.data());
    zlib_.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size(), 1u << 30));
    const uInt wanted = zlib_.avail_out;
    while (zlib_.avail_out == wanted) {
      CARTON_ASSIGN_OR_RETURN(const bool more, Fill());
      if (member_done_) {
        if (!more) break;
        // Another gzip member follows (gzip -d reads them all).
        inflateReset(&zlib_);
        member_done_ = false;
      }
      zlib_.next_in = reinterpret_cast<Bytef*>(input_.data() + input_pos_);
      zlib_.avail_in = static_cast<uInt>(input_len_ - input_pos_);
      const int rc = inflate(&zlib_, Z_NO_FLUSH);
      input_pos_ = input_len_ - zlib_.avail_in;
      if (rc == Z_STREAM_END) {
        member_done_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Corrupt(where_ + ": bad gzip data: " +
                       std::string(zlib_.msg != nullptr ? zlib_.msg : "inflate failed"));
      } else if (!more && zlib_.avail_out == wanted) {
        return Corrupt(where_ + ": the gzip stream ends early");
      }
    }
    return static_cast<std::size_t>(wanted - zlib_.avail_out);
  }

  Result<std::size_t> ReadZstd(MutableByteView out) {
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    while (o.pos == 0) {
      CARTON_ASSIGN_OR_RETURN(const bool more, Fill());
      if (!more && zstd_pending_ == 0) break;  // the last frame is done
      ZSTD_inBuffer in{input_.data(), input_len_, input_pos_};
      const std::size_t rc = ZSTD_decompressStream(zstd_.get(), &o, &in);
      input_pos_ = in.pos;
      if (ZSTD_isError(rc)) {
        return Corrupt(where_ + ": bad zstd data: " + ZSTD_getErrorName(rc));
      }
      zstd_pending_ = rc;
      if (!more && o.pos == 0 && rc != 0) {
        return Corrupt(where_ + ": the zstd stream ends early");
      }
    }
    return o.pos;
  }

  UniqueFd fd_;
  const LayerCompression compression_;
  const std::string where_;
  manifest::Sha256 hash_;
  std::vector<std::byte> input_;
  std::size_t input_pos_ = 0;
  std::size_t input_len_ = 0;
  z_stream zlib_{};
  bool zlib_ready_ = false;
  bool member_done_ = false;
  std::unique_ptr<ZSTD_DCtx, ZstdFree> zstd_;
  std::size_t zstd_pending_ = 0;  // ZSTD_decompressStream's last hint: 0 at a frame's end
};

}  // namespace

Result<std::unique_ptr<LayerStream>> LayerStream::Open(const std::string& path,
                                                       LayerCompression compression,
                                                       const std::string& where) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoIoError(errno, path + ": cannot open");
  return FromFd(std::move(fd), compression, where);
}

Result<std::unique_ptr<LayerStream>> LayerStream::FromFd(UniqueFd fd, LayerCompression compression,
                                                         const std::string& where) {
  auto stream = std::make_unique<FileLayerStream>(std::move(fd), compression, where);
  CARTON_RETURN_IF_ERROR(stream->Init());
  return std::unique_ptr<LayerStream>(std::move(stream));
}

}  // namespace carton::oci::internal
