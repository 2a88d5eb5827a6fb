// ZipWriter: streams entries into a new archive.
//
// Each entry is written in one pass: local header (CRC and sizes zero), data,
// then the header is encoded again with the real values and written over the
// first one. Whether the header carries a zip64 field is decided before the
// data from an upper bound of the compressed size, so the rewrite never
// changes its length. No data descriptors are written, so every reader finds
// the CRC and sizes in both headers.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <utility>
#include <vector>

#include "carton/carton/zip.h"
#include "carton/common/unique_fd.h"
#include "zip_codec.h"
#include "zip_format.h"
#include "zip_output.h"

namespace carton {
namespace {

namespace fmt = zip_format;

constexpr std::size_t kChunkSize = 4 << 20;
constexpr std::size_t kCentralFlush = 1 << 20;

// A source of an entry's uncompressed bytes, in chunks; an empty chunk means
// the end.
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  virtual Result<ByteView> Next() = 0;
};

class BytesSource final : public ChunkSource {
 public:
  explicit BytesSource(ByteView data) : data_(data) {}
  Result<ByteView> Next() override {
    ByteView chunk = data_.first(std::min(data_.size(), kChunkSize));
    data_ = data_.subspan(chunk.size());
    return chunk;
  }

 private:
  ByteView data_;
};

// Reads into two buffers in turn, so the previous chunk stays valid while
// ZipOutput::WriteAsync writes it.
class FileSource final : public ChunkSource {
 public:
  FileSource(UniqueFd fd, std::string path,
             std::vector<std::byte> (*buffers)[2])
      : fd_(std::move(fd)), path_(std::move(path)), buffers_(buffers) {}
  Result<ByteView> Next() override {
    std::vector<std::byte>& buffer = (*buffers_)[next_];
    next_ ^= 1;
    std::size_t have = 0;
    while (have < buffer.size()) {
      ssize_t r = ::read(fd_.get(), buffer.data() + have, buffer.size() - have);
      if (r < 0) {
        if (errno == EINTR) continue;
        return IoError(path_ + ": read failed: " + std::strerror(errno));
      }
      if (r == 0) break;
      have += static_cast<std::size_t>(r);
    }
    return ByteView(buffer.data(), have);
  }

 private:
  UniqueFd fd_;
  std::string path_;
  std::vector<std::byte> (*buffers_)[2];
  int next_ = 0;
};

// True if the compressed size of `size` input bytes might not fit in 32
// bits. The margin (size/128 + 64 KiB) exceeds the worst-case expansion of
// both zlib's deflate and zstd.
bool MightNeedZip64(Compression method, std::uint64_t size) {
  if (method == Compression::kStored) return size >= fmt::kMax32;
  std::uint64_t bound;
  return !CheckedAdd(size, size / 128 + 65536, &bound) || bound >= fmt::kMax32;
}

std::uint16_t VersionNeeded(Compression method, bool zip64) {
  std::uint16_t v = method == Compression::kStored ? fmt::kVersionStored
                    : method == Compression::kZstd ? fmt::kVersionZstd
                                                   : fmt::kVersionDeflate;
  if (zip64 && v < fmt::kVersionZip64) v = fmt::kVersionZip64;
  return v;
}

std::string EntryContext(std::string_view name) {
  return "entry " + fmt::QuoteName(name);
}

Status ChangedSize(std::string_view name, std::uint64_t size) {
  return IoError(EntryContext(name) +
                 ": source changed size while being read (expected " +
                 std::to_string(size) + " bytes)");
}

}  // namespace

struct ZipWriter::Impl {
  std::string path;
  ZipWriterOptions options;
  zip_internal::ZipOutput out;
  std::vector<fmt::CentralHeader> entries;
  std::unordered_set<std::string> names;
  std::vector<std::byte> read_buffers[2];
  Status failed;
  bool finished = false;

  Status CheckWritable() const {
    if (finished) return InvalidArgument(path + ": archive already finished");
    return failed;
  }

  // Errors that leave the archive as it was: the writer stays usable.
  Status CheckName(std::string_view name) const {
    if (name.size() > fmt::kMax16) {
      return InvalidArgument(EntryContext(name) +
                             ": name is longer than 65535 bytes");
    }
    if (auto why = fmt::CheckEntryName(name)) {
      return InvalidArgument(EntryContext(name) + ": name " + *why);
    }
    if (!fmt::IsValidUtf8(name)) {
      return InvalidArgument(EntryContext(name) + ": name is not valid UTF-8");
    }
    if (names.count(std::string(name)) != 0) {
      return InvalidArgument(EntryContext(name) + ": duplicate name");
    }
    return Status::Ok();
  }

  // Everything after the first byte is written: an error poisons the writer.
  Result<ZipAddResult> WriteEntry(std::string_view name, Compression method,
                                  std::unique_ptr<zip_codec::Encoder> encoder,
                                  std::uint64_t size, ChunkSource& source,
                                  const ZipAddOptions& add, bool directory) {
    Result<ZipAddResult> r = WriteEntryUnchecked(
        name, method, std::move(encoder), size, source, add, directory);
    if (!r.ok()) {
      failed = r.status();
      out.Abort();
    }
    return r;
  }

  Result<ZipAddResult> WriteEntryUnchecked(
      std::string_view name, Compression method,
      std::unique_ptr<zip_codec::Encoder> encoder, std::uint64_t size,
      ChunkSource& source, const ZipAddOptions& add, bool directory) {
    const std::uint64_t header_offset = out.position();
    fmt::LocalHeader h;
    h.zip64 = MightNeedZip64(method, size);
    const bool zip64 = h.zip64 || header_offset >= fmt::kMax32;
    // APPNOTE 4.4.3.2 lists 2.0 for directories.
    h.version_needed = !directory ? VersionNeeded(method, zip64)
                       : zip64    ? fmt::kVersionZip64
                                  : fmt::kVersionDeflate;
    // Names are checked to be UTF-8; the flag tells readers so.
    bool ascii =
        std::none_of(name.begin(), name.end(), [](char c) { return c & 0x80; });
    h.flags = ascii ? 0 : fmt::kFlagUtf8;
    h.method = ZipMethodNumber(method);
    h.name = name;
    const std::uint32_t alignment =
        method == Compression::kStored && !directory ? options.alignment : 1;
    std::vector<std::byte> header =
        fmt::EncodeLocalHeader(h, header_offset, alignment);
    CARTON_RETURN_IF_ERROR(out.Write(header));

    ZipAddResult result;
    result.data_offset = out.position();
    std::optional<manifest::Sha256> sha;
    if (add.sha256) sha.emplace();
    uLong crc = crc32_z(0, nullptr, 0);
    std::uint64_t total = 0;
    const zip_codec::ByteSink sink = [this](ByteView b) {
      return out.Write(b);
    };
    for (;;) {
      CARTON_ASSIGN_OR_RETURN(ByteView chunk, source.Next());
      if (chunk.empty()) break;
      if (chunk.size() > size - total) return ChangedSize(name, size);
      total += chunk.size();
      crc = crc32_z(crc, reinterpret_cast<const Bytef*>(chunk.data()),
                    chunk.size());
      if (sha) sha->Update(chunk);
      if (add.observer) add.observer(chunk);
      if (encoder) {
        CARTON_RETURN_IF_ERROR(encoder->Update(chunk, sink));
      } else {
        // The source keeps `chunk` valid until its next-but-one chunk; the
        // next call on `out` waits for this write.
        CARTON_RETURN_IF_ERROR(out.WriteAsync(chunk));
      }
    }
    if (total != size) return ChangedSize(name, size);
    if (encoder) CARTON_RETURN_IF_ERROR(encoder->Finish(sink));

    result.size = total;
    result.compressed_size = out.position() - result.data_offset;
    result.crc32 = static_cast<std::uint32_t>(crc);
    if (sha) result.sha256 = sha->Finish();
    if (!h.zip64 &&
        (result.compressed_size >= fmt::kMax32 || total >= fmt::kMax32)) {
      return Internal(EntryContext(name) + ": compressed size " +
                      std::to_string(result.compressed_size) +
                      " exceeds its bound");
    }
    h.crc32 = result.crc32;
    h.size = result.size;
    h.compressed_size = result.compressed_size;
    std::vector<std::byte> final_header =
        fmt::EncodeLocalHeader(h, header_offset, alignment);
    if (final_header.size() != header.size()) {
      return Internal(EntryContext(name) + ": local header changed length");
    }
    CARTON_RETURN_IF_ERROR(out.WriteAt(header_offset, final_header));

    fmt::CentralHeader c;
    c.version_needed = h.version_needed;
    c.flags = h.flags;
    c.method = h.method;
    c.crc32 = h.crc32;
    c.compressed_size = h.compressed_size;
    c.size = h.size;
    c.local_header_offset = header_offset;
    c.external_attributes =
        directory ? (fmt::kUnixDirMode << 16) | fmt::kDosDirAttribute
                  : fmt::kUnixFileMode << 16;
    c.name = std::string(name);
    names.insert(c.name);
    entries.push_back(std::move(c));
    return result;
  }

  Result<ZipAddResult> Add(std::string_view name, Compression method, int level,
                           std::uint64_t size, ChunkSource& source,
                           const ZipAddOptions& add) {
    CARTON_ASSIGN_OR_RETURN(int resolved,
                            zip_codec::ResolveLevel(method, level));
    std::unique_ptr<zip_codec::Encoder> encoder;
    if (method != Compression::kStored) {
      auto e =
          zip_codec::MakeEncoder(method, resolved, size, options.zstd_workers);
      if (!e.ok()) return e.status().WithContext(EntryContext(name));
      encoder = std::move(e).value();
    }
    return WriteEntry(name, method, std::move(encoder), size, source, add,
                      false);
  }

  Status WriteCentralDirectory() {
    const std::uint64_t cd_offset = out.position();
    std::vector<std::byte> buffer;
    buffer.reserve(kCentralFlush + fmt::kCentralHeaderSize + 2 * fmt::kMax16);
    for (const auto& e : entries) {
      fmt::AppendCentralHeader(e, &buffer);
      if (buffer.size() >= kCentralFlush) {
        CARTON_RETURN_IF_ERROR(out.Write(buffer));
        buffer.clear();
      }
    }
    CARTON_RETURN_IF_ERROR(out.Write(buffer));
    buffer.clear();
    fmt::EndRecord end{entries.size(), cd_offset, out.position() - cd_offset};
    fmt::AppendEndRecords(end, out.position(), &buffer);
    return out.Write(buffer);
  }
};

Result<ZipWriter> ZipWriter::Create(const std::string& path,
                                    const ZipWriterOptions& options) {
  if (options.alignment == 0 || options.alignment > kZipMaxAlignment ||
      (options.alignment & (options.alignment - 1)) != 0) {
    return InvalidArgument(
        path + ": alignment " + std::to_string(options.alignment) +
        " is not a power of two in 1.." + std::to_string(kZipMaxAlignment));
  }
  if (options.zstd_workers < 0) {
    return InvalidArgument(path + ": negative zstd worker count");
  }
  CARTON_ASSIGN_OR_RETURN(
      auto out, zip_internal::ZipOutput::Create(path, options.durable));
  auto impl = std::make_unique<Impl>(
      Impl{path, options, std::move(out), {}, {}, {}, {}, false});
  return ZipWriter(std::move(impl));
}

ZipWriter::ZipWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZipWriter::ZipWriter(ZipWriter&&) noexcept = default;
ZipWriter& ZipWriter::operator=(ZipWriter&&) noexcept = default;
ZipWriter::~ZipWriter() = default;

std::size_t ZipWriter::entry_count() const { return impl_->entries.size(); }

Result<ZipAddResult> ZipWriter::AddFile(std::string_view name,
                                        const std::string& source_path,
                                        Compression method, int level,
                                        const ZipAddOptions& add) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  CARTON_RETURN_IF_ERROR(impl_->CheckName(name));
  UniqueFd fd(::open(source_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    std::string msg = EntryContext(name) + ": cannot open " + source_path +
                      ": " + std::strerror(errno);
    return errno == ENOENT ? NotFound(std::move(msg)) : IoError(std::move(msg));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return IoError(EntryContext(name) + ": cannot stat " + source_path + ": " +
                   std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(EntryContext(name) + ": " + source_path +
                           " is not a regular file");
  }
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  for (auto& b : impl_->read_buffers) b.resize(kChunkSize);
  FileSource source(std::move(fd), source_path, &impl_->read_buffers);
  return impl_->Add(name, method, level, static_cast<std::uint64_t>(st.st_size),
                    source, add);
}

Result<ZipAddResult> ZipWriter::AddBytes(std::string_view name, ByteView data,
                                         Compression method, int level,
                                         const ZipAddOptions& add) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  CARTON_RETURN_IF_ERROR(impl_->CheckName(name));
  BytesSource source(data);
  return impl_->Add(name, method, level, data.size(), source, add);
}

Status ZipWriter::AddDirectory(std::string_view name) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  std::string dir(name);
  if (dir.empty() || dir.back() != '/') dir += '/';
  CARTON_RETURN_IF_ERROR(impl_->CheckName(dir));
  BytesSource source({});
  return impl_
      ->WriteEntry(dir, Compression::kStored, nullptr, 0, source, {}, true)
      .status();
}

Status ZipWriter::Finish() {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  Status s = impl_->WriteCentralDirectory();
  if (s.ok()) s = impl_->out.Commit();
  if (!s.ok()) {
    impl_->failed = s;
    impl_->out.Abort();
    return s;
  }
  impl_->finished = true;
  return Status::Ok();
}

}  // namespace carton
