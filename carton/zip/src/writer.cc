// ZipWriter: builds an archive with libzip.
//
// AddFile and AddBytes read their input once, computing CRC-32 and SHA-256,
// and compress deflate and zstd entries into the spool; AddFileUnread and
// AddLater read nothing, their bytes come when written. libzip writes
// everything in Finish() (zip_close), taking compressed bytes as they are
// from an EntrySource whose STAT gives method, sizes and CRC-32 (for stored
// bytes libzip computes the CRC-32 itself as it copies them).
//
// libzip writes new entries in index order, each as a local header of 30
// bytes, the name, a zip64 extra field when a size needs one, and the extra
// fields set with ZIP_FL_LOCAL, then the data. With every size known when
// the entry is added, the offset of every local header is known too, so
// the alignment field (0xD935) of a stored entry can be sized to put its
// data on the alignment. EntrySource checks each such offset when libzip
// reaches it.

#include "carton/zip/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <utility>
#include <vector>

#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"
#include "carton/zip/layout.h"
#include "codec.h"
#include "copier.h"
#include "entry_source.h"
#include "frames.h"
#include "libzip.h"
#include "output.h"
#include "records.h"
#include "spool.h"

namespace carton {
namespace {

using zip_internal::ArchivePtr;
using zip_internal::EntryData;
using zip_internal::EntrySource;

constexpr std::size_t kChunkSize = 4 << 20;

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

class FileSource final : public ChunkSource {
 public:
  FileSource(UniqueFd fd, std::string path, std::vector<std::byte>* buffer)
      : fd_(std::move(fd)), path_(std::move(path)), buffer_(buffer) {}
  Result<ByteView> Next() override {
    std::size_t have = 0;
    while (have < buffer_->size()) {
      ssize_t r = ::read(fd_.get(), buffer_->data() + have, buffer_->size() - have);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoIoError(errno, path_ + ": read failed");
      }
      if (r == 0) break;
      have += static_cast<std::size_t>(r);
    }
    return ByteView(buffer_->data(), have);
  }

 private:
  UniqueFd fd_;
  std::string path_;
  std::vector<std::byte>* buffer_;
};

std::string EntryContext(std::string_view name) { return "entry " + zip_internal::QuoteName(name); }

Status ChangedSize(std::string_view name, std::uint64_t size) {
  return IoError(EntryContext(name) + ": source changed size while being read (expected " +
                 std::to_string(size) + " bytes)");
}

}  // namespace

struct ZipWriter::Impl {
  std::string path;
  ZipWriterOptions options;
  std::unique_ptr<zip_internal::ZipOutput> out;
  zip_internal::Spool spool;
  std::vector<std::unique_ptr<EntrySource>> sources;
  // Declared last so it is discarded before the objects its sources use.
  ArchivePtr archive;
  std::unordered_set<std::string> names;
  std::size_t entries = 0;
  std::uint64_t next_header = 0;  // offset of the next local header
  std::vector<std::byte> read_buffer;
  Status failed;
  bool finished = false;

  Status CheckWritable() const {
    if (finished) return InvalidArgument(path + ": archive already finished");
    return failed;
  }

  // Errors that leave the archive as it was: the writer stays usable.
  Status CheckName(std::string_view name) const {
    if (name.size() > zip_internal::kMax16) {
      return InvalidArgument(EntryContext(name) + ": name is longer than 65535 bytes");
    }
    if (auto why = zip_internal::CheckEntryName(name)) {
      return InvalidArgument(EntryContext(name) + ": name " + *why);
    }
    if (names.count(std::string(name)) != 0) {
      return InvalidArgument(EntryContext(name) + ": duplicate name");
    }
    return Status::Ok();
  }

  Status Poison(Status s) {
    failed = s;
    archive.reset();
    out->Abort();
    return s;
  }

  Status LibzipFailure(std::string_view name) {
    return zip_internal::WriteError(zip_get_error(archive.get()), EntryContext(name));
  }

  // Sets what libzip would otherwise take from the clock and the source:
  // the fixed time and Unix mode that make output deterministic.
  Status SetFixedMetadata(zip_uint64_t index, std::string_view name, std::uint32_t attributes) {
    if (zip_file_set_dostime(archive.get(), index, zip_internal::kDosTime, zip_internal::kDosDate,
                             0) != 0 ||
        zip_file_set_external_attributes(archive.get(), index, 0, ZIP_OPSYS_UNIX, attributes) !=
            0) {
      return LibzipFailure(name);
    }
    return Status::Ok();
  }

  // AddLater and AddStream: a stored entry of `size` bytes that `data`'s
  // producer gives when Finish() reaches it.
  Result<ZipAddResult> AddStoredLater(std::string_view name, std::uint64_t size, EntryData data) {
    CARTON_RETURN_IF_ERROR(CheckWritable());
    CARTON_RETURN_IF_ERROR(CheckName(name));
    data.name = std::string(name);
    data.method = zip_internal::kMethodStored;
    data.size = data.compressed_size = size;
    ZipAddResult result;
    result.size = result.compressed_size = size;
    auto offset = AddToArchive(std::move(data));
    if (!offset.ok()) return Poison(offset.status());
    result.data_offset = *offset;
    return result;
  }

  // Hands the entry described by `data` (everything but data_offset) to
  // libzip and returns where its data will start.
  Result<std::uint64_t> AddToArchive(EntryData data) {
    const std::string name = data.name;
    const bool stored = data.method == zip_internal::kMethodStored;
    const ZipEntryPlacement placement =
        PlaceZipEntry(next_header, name.size(),
                      CompressionFromZipMethod(data.method).value_or(Compression::kStored),
                      data.size, data.compressed_size, options.alignment);
    const auto pad = static_cast<std::size_t>(placement.alignment_field);
    data.data_offset = placement.data_offset;
    const std::uint64_t data_offset = data.data_offset;

    auto source =
        std::make_unique<EntrySource>(std::move(data), &spool, out.get(), &options.on_read);
    CARTON_ASSIGN_OR_RETURN(zip_internal::SourcePtr src, source->MakeSource());
    sources.push_back(std::move(source));
    zip_int64_t index = zip_file_add(archive.get(), name.c_str(), src.get(), ZIP_FL_ENC_UTF_8);
    if (index < 0) return LibzipFailure(name);
    src.release();  // the archive owns it now
    const auto i = static_cast<zip_uint64_t>(index);
    // Without an explicit method libzip would deflate stored bytes; the
    // compressed ones keep the method their source reports.
    if (stored && zip_set_file_compression(archive.get(), i, ZIP_CM_STORE, 0))
      return LibzipFailure(name);
    CARTON_RETURN_IF_ERROR(SetFixedMetadata(i, name, zip_internal::kUnixFileMode << 16));
    if (pad != 0) {
      // The field's data: the alignment, then zeros.
      std::vector<zip_uint8_t> field(pad - zip_internal::kExtraHeaderSize, 0);
      field[0] = static_cast<zip_uint8_t>(options.alignment & 0xFF);
      field[1] = static_cast<zip_uint8_t>(options.alignment >> 8);
      if (zip_file_extra_field_set(archive.get(), i, zip_internal::kAlignmentExtraId,
                                   ZIP_EXTRA_FIELD_NEW, field.data(),
                                   static_cast<zip_uint16_t>(field.size()), ZIP_FL_LOCAL) != 0) {
        return LibzipFailure(name);
      }
    }
    names.insert(name);
    ++entries;
    next_header = placement.next_header;
    return data_offset;
  }

  // Reads `source` once: CRC-32, SHA-256 and the observer, and for deflate
  // and zstd the compression into the spool. Stored bytes from memory are
  // copied to the spool; a stored file (`file_path`) is read again by
  // libzip.
  Result<ZipAddResult> AddData(std::string_view name, Compression method,
                               std::unique_ptr<zip_internal::Encoder> encoder, std::uint64_t size,
                               ChunkSource& source, const ZipAddOptions& add,
                               const std::string& file_path, const FileIdentity& identity) {
    const bool to_spool = method != Compression::kStored || file_path.empty();
    EntryData data;
    data.name = std::string(name);
    data.method = ZipMethodNumber(method);
    if (!to_spool) {
      data.file_path = file_path;
      data.identity = identity;
    }
    data.spool_offset = spool.size();
    const zip_internal::ByteSink sink = [this](ByteView b) { return spool.Append(b); };

    std::optional<manifest::Sha256> sha;
    if (add.sha256) sha.emplace();
    std::uint32_t crc = 0;
    std::uint64_t total = 0;
    for (;;) {
      CARTON_ASSIGN_OR_RETURN(ByteView chunk, source.Next());
      if (chunk.empty()) break;
      if (chunk.size() > size - total) return ChangedSize(name, size);
      total += chunk.size();
      crc = UpdateCrc32(crc, chunk);
      if (sha) sha->Update(chunk);
      if (add.observer) add.observer(chunk);
      if (to_spool && options.on_read) options.on_read(chunk.size());
      if (encoder) {
        CARTON_RETURN_IF_ERROR(encoder->Update(chunk, sink));
      } else if (to_spool) {
        CARTON_RETURN_IF_ERROR(spool.Append(chunk));
      }
    }
    if (total != size) return ChangedSize(name, size);
    if (encoder) CARTON_RETURN_IF_ERROR(encoder->Finish(sink));

    ZipAddResult result;
    result.size = total;
    result.compressed_size = to_spool ? spool.size() - data.spool_offset : total;
    result.crc32 = crc;
    if (sha) result.sha256 = sha->Finish();
    data.size = result.size;
    data.compressed_size = result.compressed_size;
    data.crc32 = result.crc32;
    CARTON_ASSIGN_OR_RETURN(result.data_offset, AddToArchive(std::move(data)));
    return result;
  }

  // AddFiles' checks of `files` before anything is added: names, methods
  // and levels. Returns each file's resolved level.
  Result<std::vector<int>> CheckBatch(const std::vector<ZipFileToAdd>& files) const {
    std::vector<int> levels;
    std::unordered_set<std::string_view> batch_names;
    for (const auto& f : files) {
      CARTON_RETURN_IF_ERROR(CheckName(f.name));
      if (!batch_names.insert(f.name).second) {
        return InvalidArgument(EntryContext(f.name) + ": duplicate name");
      }
      if (f.method == Compression::kStored) {
        return InvalidArgument(EntryContext(f.name) + ": AddFiles compresses; add stored files " +
                               "with AddFile or AddFileUnread");
      }
      auto level = zip_internal::ResolveLevel(f.method, f.level);
      if (!level.ok()) return level.status().WithContext(EntryContext(f.name));
      levels.push_back(*level);
    }
    return levels;
  }

  // AddFiles: hands file `f`, compressed beforehand into `compressed` as
  // `r` describes, to the archive through the spool. Returns where its data
  // will start.
  Result<std::uint64_t> AddCompressed(const ZipFileToAdd& f, ByteView compressed,
                                      const ZipAddResult& r) {
    EntryData data;
    data.name = f.name;
    data.method = ZipMethodNumber(f.method);
    data.spool_offset = spool.size();
    CARTON_RETURN_IF_ERROR(spool.Append(compressed));
    data.size = r.size;
    data.compressed_size = r.compressed_size;
    data.crc32 = r.crc32;
    return AddToArchive(std::move(data));
  }

  // Everything after the input starts being read poisons the writer on
  // error: later calls and Finish() return that error.
  Result<ZipAddResult> Add(std::string_view name, Compression method, int level, std::uint64_t size,
                           ChunkSource& source, const ZipAddOptions& add,
                           const std::string& file_path, const FileIdentity& identity = {}) {
    CARTON_ASSIGN_OR_RETURN(int resolved, zip_internal::ResolveLevel(method, level));
    std::unique_ptr<zip_internal::Encoder> encoder;
    if (method != Compression::kStored) {
      auto e = zip_internal::MakeEncoder(method, resolved, size, options.zstd_workers);
      if (!e.ok()) return e.status().WithContext(EntryContext(name));
      encoder = std::move(e).value();
    }
    auto r = AddData(name, method, std::move(encoder), size, source, add, file_path, identity);
    if (!r.ok()) return Poison(r.status());
    return r;
  }

  Status AddDirectory(const std::string& dir) {
    zip_int64_t index = zip_dir_add(archive.get(), dir.c_str(), ZIP_FL_ENC_UTF_8);
    if (index < 0) return LibzipFailure(dir);
    const auto i = static_cast<zip_uint64_t>(index);
    if (zip_set_file_compression(archive.get(), i, ZIP_CM_STORE, 0) != 0) return LibzipFailure(dir);
    CARTON_RETURN_IF_ERROR(SetFixedMetadata(
        i, dir, (zip_internal::kUnixDirMode << 16) | zip_internal::kDosDirAttribute));
    names.insert(dir);
    ++entries;
    next_header = PlaceZipDirectory(next_header, dir.size());
    return Status::Ok();
  }

  // The first detailed reason zip_close failed: libzip keeps only codes.
  Status CloseFailure(zip_t* z) const {
    for (const auto& s : sources) {
      if (!s->error().ok()) return s->error();
    }
    if (!out->error().ok()) return out->error();
    return zip_internal::WriteError(zip_get_error(z), path);
  }

  Status Close() {
    if (entries == 0) {
      // libzip removes an archive left without entries instead of writing
      // one; an empty archive is just the end record.
      archive.reset();
      std::array<std::byte, zip_internal::kEndSize> end{};
      StoreLE32(end.data(), zip_internal::kEndSignature);
      CARTON_RETURN_IF_ERROR(out->Write(end));
      return out->Commit();
    }
    // Every entry's data ends before next_header and the central directory
    // follows: the file's length and blocks can be set now. The writes then
    // neither extend the file nor allocate blocks one at a time (less kernel
    // time, docs/BENCHMARKS.md), and a full disk shows before any byte of
    // the archive is written.
    CARTON_RETURN_IF_ERROR(out->Reserve(next_header));
    // Stopped (its threads joined) when this returns, before the writer
    // can remove the output.
    zip_internal::FileCopier copier;
    if (options.file_threads > 0) {
      for (auto& s : sources) s->UseCopier(&copier);
      if (copier.job_count() != 0) {
        CARTON_RETURN_IF_ERROR(copier.Start(out->fd(), path, options.file_threads));
      }
    }
    zip_t* z = archive.release();
    if (zip_close(z) != 0) {
      Status s = CloseFailure(z);
      zip_discard(z);
      return s;
    }
    return Status::Ok();
  }

  // AddFile of a zstd file over kZipBatchFileMax bytes on file_threads:
  // independent frames written straight into the archive (CompressFrames).
  // nullopt, having read nothing, when the entry's data offset would depend
  // on the compressed size (whether it needs zip64): then AddFile compresses
  // it as one frame.
  Result<std::optional<ZipAddResult>> AddFrames(std::string_view name, int fd,
                                                const std::string& source_path,
                                                const FileIdentity& identity, int level) {
    const std::uint64_t size = identity.size;
    const ZipEntryPlacement low =
        PlaceZipEntry(next_header, name.size(), Compression::kZstd, size, 0, options.alignment);
    const ZipEntryPlacement high =
        PlaceZipEntry(next_header, name.size(), Compression::kZstd, size,
                      zip_internal::ZstdFramesBound(size), options.alignment);
    if (low.data_offset != high.data_offset) return std::optional<ZipAddResult>();
    CARTON_ASSIGN_OR_RETURN(int resolved, zip_internal::ResolveLevel(Compression::kZstd, level));
    const zip_internal::FramesInput in{std::string(name), source_path, fd, size, resolved};
    const zip_internal::FramesOutput to{out->fd(), path, low.data_offset};
    auto frames = zip_internal::CompressFrames(in, to, options.file_threads, options.on_read);
    if (!frames.ok()) return Poison(frames.status());
    EntryData data;
    data.name = std::string(name);
    data.method = zip_internal::kMethodZstd;
    data.size = size;
    data.compressed_size = frames->compressed_size;
    data.crc32 = frames->crc32;
    data.prewritten = true;
    auto offset = AddToArchive(std::move(data));
    if (!offset.ok()) return Poison(offset.status());
    if (*offset != low.data_offset) {
      return Poison(Internal(EntryContext(name) + ": frames written at " +
                             std::to_string(low.data_offset) + ", entry placed at " +
                             std::to_string(*offset)));
    }
    ZipAddResult r;
    r.size = size;
    r.compressed_size = frames->compressed_size;
    r.crc32 = frames->crc32;
    r.data_offset = *offset;
    return std::optional<ZipAddResult>(r);
  }
};

Result<ZipWriter> ZipWriter::Create(const std::string& path, const ZipWriterOptions& options) {
  if (options.alignment == 0 || options.alignment > kZipMaxAlignment ||
      (options.alignment & (options.alignment - 1)) != 0) {
    return InvalidArgument(path + ": alignment " + std::to_string(options.alignment) +
                           " is not a power of two in 1.." + std::to_string(kZipMaxAlignment));
  }
  if (options.zstd_workers < 0) {
    return InvalidArgument(path + ": negative zstd worker count");
  }
  CARTON_ASSIGN_OR_RETURN(auto out, zip_internal::ZipOutput::Create(path, options.durable));
  CARTON_ASSIGN_OR_RETURN(zip_internal::SourcePtr src, out->MakeSource());
  zip_internal::LibzipError error;
  zip_t* z = zip_open_from_source(src.get(), ZIP_CREATE | ZIP_TRUNCATE, error.get());
  if (z == nullptr) return zip_internal::WriteError(error.get(), path);
  src.release();  // the archive owns it now
  auto impl = std::unique_ptr<Impl>(new Impl{
      path, options, std::move(out), zip_internal::Spool(path), {}, {}, {}, 0, 0, {}, {}, false});
  impl->archive.reset(z);
  return ZipWriter(std::move(impl));
}

ZipWriter::ZipWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZipWriter::ZipWriter(ZipWriter&&) noexcept = default;
ZipWriter& ZipWriter::operator=(ZipWriter&&) noexcept = default;
ZipWriter::~ZipWriter() = default;

std::size_t ZipWriter::entry_count() const { return impl_->entries; }

namespace {

struct OpenedFile {
  UniqueFd fd;
  FileIdentity identity;
};

// Opens the regular file `path` for entry `name`.
Result<OpenedFile> OpenSource(std::string_view name, const std::string& path) {
  // O_NONBLOCK: a pipe is refused below instead of waiting for a writer;
  // reads of files ignore it.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(errno, EntryContext(name) + ": cannot open " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoIoError(errno, EntryContext(name) + ": cannot stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(EntryContext(name) + ": " + path + " is not a regular file");
  }
  auto identity = IdentityOfFd(fd.get());
  if (!identity.ok()) return identity.status().WithContext(EntryContext(name) + ": " + path);
  return OpenedFile{std::move(fd), *identity};
}

}  // namespace

Result<ZipAddResult> ZipWriter::AddFile(std::string_view name, const std::string& source_path,
                                        Compression method, int level, const ZipAddOptions& add) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  CARTON_RETURN_IF_ERROR(impl_->CheckName(name));
  CARTON_ASSIGN_OR_RETURN(OpenedFile file, OpenSource(name, source_path));
  ::posix_fadvise(file.fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  const FileIdentity identity = file.identity;
  Result<ZipAddResult> r = Status::Ok();
  std::optional<ZipAddResult> framed;
  if (method == Compression::kZstd && impl_->options.file_threads > 0 &&
      impl_->options.zstd_frames && identity.size > kZipBatchFileMax && !add.sha256 &&
      !add.observer) {
    CARTON_ASSIGN_OR_RETURN(framed,
                            impl_->AddFrames(name, file.fd.get(), source_path, identity, level));
  }
  if (framed) {
    r = *framed;
  } else {
    impl_->read_buffer.resize(kChunkSize);
    FileSource source(std::move(file.fd), source_path, &impl_->read_buffer);
    r = impl_->Add(name, method, level, identity.size, source, add, source_path, identity);
  }
  if (!r.ok()) return r;
  // The hash describes the file as it was while read: it must not have
  // changed during that read (stored files are read again when written).
  auto after = IdentityOfPath(source_path);
  if (!after.ok() || *after != identity) {
    return impl_->Poison(
        IoError(EntryContext(name) + ": " + source_path + " changed while it was read"));
  }
  r->source_identity = identity;
  return r;
}

namespace {

// Files AddFiles reads and compresses before handing them to the archive:
// bounds its memory to about twice this (input and output) per batch.
constexpr std::uint64_t kBatchBytes = std::uint64_t{16} << 20;
constexpr std::size_t kBatchFiles = 1024;

// One file of AddFiles, read, hashed and compressed on a worker thread.
struct PreparedFile {
  Status status;
  ZipAddResult result;
  std::vector<std::byte> compressed;
};

// Reads the whole of `path` (`size` bytes) into `buffer`; kIoError if it
// does not hold exactly that many now.
Status ReadWhole(int fd, std::string_view name, const std::string& path, std::uint64_t size,
                 std::vector<std::byte>* buffer) {
  buffer->resize(static_cast<std::size_t>(size) + 1);  // room to notice growth
  std::size_t have = 0;
  while (have < buffer->size()) {
    ssize_t r = ::read(fd, buffer->data() + have, buffer->size() - have);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path + ": read failed");
    }
    if (r == 0) break;
    have += static_cast<std::size_t>(r);
  }
  if (have != size) return ChangedSize(name, size);
  buffer->resize(have);
  return Status::Ok();
}

// What AddFile computes for `f`: CRC-32, SHA-256 when asked, and the
// compressed bytes, from one read of the file, checked unchanged after it.
Status PrepareFile(const ZipFileToAdd& f, int level, int zstd_workers, bool sha256,
                   PreparedFile* out) {
  CARTON_ASSIGN_OR_RETURN(OpenedFile file, OpenSource(f.name, f.source_path));
  const FileIdentity identity = file.identity;
  if (identity.size > kZipBatchFileMax) {
    return InvalidArgument(EntryContext(f.name) + ": " + f.source_path + " is larger than " +
                           std::to_string(kZipBatchFileMax) + " bytes (add it with AddFile)");
  }
  std::vector<std::byte> bytes;
  CARTON_RETURN_IF_ERROR(ReadWhole(file.fd.get(), f.name, f.source_path, identity.size, &bytes));
  auto encoder = zip_internal::MakeEncoder(f.method, level, identity.size, zstd_workers);
  if (!encoder.ok()) return encoder.status().WithContext(EntryContext(f.name));
  out->compressed.reserve(static_cast<std::size_t>(identity.size / 2));
  const zip_internal::ByteSink sink = [out](ByteView b) {
    out->compressed.insert(out->compressed.end(), b.begin(), b.end());
    return Status::Ok();
  };
  if (!bytes.empty()) CARTON_RETURN_IF_ERROR((*encoder)->Update(bytes, sink));
  CARTON_RETURN_IF_ERROR((*encoder)->Finish(sink));
  ZipAddResult& r = out->result;
  r.size = identity.size;
  r.compressed_size = out->compressed.size();
  r.crc32 = UpdateCrc32(0, bytes);
  if (sha256) {
    manifest::Sha256 sha;
    sha.Update(bytes);
    r.sha256 = sha.Finish();
  }
  auto after = IdentityOfPath(f.source_path);
  if (!after.ok() || *after != identity) {
    return IoError(EntryContext(f.name) + ": " + f.source_path + " changed while it was read");
  }
  r.source_identity = identity;
  return Status::Ok();
}

// The end of the batch of `files` that starts at `begin`: files up to
// kBatchBytes (at least one), at most kBatchFiles.
std::size_t BatchEnd(const std::vector<ZipFileToAdd>& files, std::size_t begin) {
  std::size_t end = begin;
  std::uint64_t bytes = 0;
  while (end < files.size() && end - begin < kBatchFiles && (end == begin || bytes < kBatchBytes)) {
    struct stat st;
    if (::stat(files[end].source_path.c_str(), &st) == 0) {
      bytes += static_cast<std::uint64_t>(st.st_size);
    }
    ++end;
  }
  return end;
}

// Prepares files [begin, begin + prepared->size()) of `files` on up to
// `threads` threads; each one's own error goes to its PreparedFile.
// Errors: kInternal if a thread could not run.
Status PrepareBatch(const std::vector<ZipFileToAdd>& files, const std::vector<int>& levels,
                    std::size_t begin, int zstd_workers, const ZipAddOptions& add, unsigned threads,
                    std::vector<PreparedFile>* prepared) {
  try {
    ParallelFor(prepared->size(), threads, [&](std::size_t i) {
      PreparedFile& p = (*prepared)[i];
      p.status = PrepareFile(files[begin + i], levels[begin + i], zstd_workers, add.sha256, &p);
    });
  } catch (const std::exception& e) {
    return Internal(std::string("compressing files: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ZipAddResult>> ZipWriter::AddFiles(const std::vector<ZipFileToAdd>& files,
                                                      const ZipAddOptions& add, unsigned threads) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  if (add.observer) return InvalidArgument("AddFiles takes no observer");
  CARTON_ASSIGN_OR_RETURN(std::vector<int> levels, impl_->CheckBatch(files));
  std::vector<ZipAddResult> results;
  results.reserve(files.size());
  // A file of at most kZipBatchFileMax bytes is at most two zstd jobs:
  // one worker per thread gives the same frame as several (the output is
  // the same for any count from 1) with less memory.
  const int workers = std::min(impl_->options.zstd_workers, 1);
  for (std::size_t begin = 0, end = 0; begin < files.size(); begin = end) {
    end = BatchEnd(files, begin);
    std::vector<PreparedFile> prepared(end - begin);
    Status s = PrepareBatch(files, levels, begin, workers, add, threads, &prepared);
    if (!s.ok()) return impl_->Poison(s);
    // Handed to the archive in order, as AddFile would have.
    for (std::size_t i = 0; i < prepared.size(); ++i) {
      PreparedFile& p = prepared[i];
      if (!p.status.ok()) return impl_->Poison(p.status);
      auto offset = impl_->AddCompressed(files[begin + i], p.compressed, p.result);
      if (!offset.ok()) return impl_->Poison(offset.status());
      p.result.data_offset = *offset;
      if (impl_->options.on_read) impl_->options.on_read(p.result.size);
      results.push_back(std::move(p.result));
      p.compressed = {};
    }
  }
  return results;
}

Result<ZipAddResult> ZipWriter::AddFileUnread(std::string_view name,
                                              const std::string& source_path) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  CARTON_RETURN_IF_ERROR(impl_->CheckName(name));
  CARTON_ASSIGN_OR_RETURN(OpenedFile file, OpenSource(name, source_path));
  EntryData data;
  data.name = std::string(name);
  data.method = zip_internal::kMethodStored;
  data.size = data.compressed_size = file.identity.size;
  data.file_path = source_path;
  data.identity = file.identity;
  ZipAddResult result;
  result.size = result.compressed_size = file.identity.size;
  result.source_identity = file.identity;
  auto offset = impl_->AddToArchive(std::move(data));
  if (!offset.ok()) return impl_->Poison(offset.status());
  result.data_offset = *offset;
  return result;
}

Result<ZipAddResult> ZipWriter::AddLater(std::string_view name, std::uint64_t size,
                                         Producer produce) {
  EntryData data;
  data.produce = std::move(produce);
  return impl_->AddStoredLater(name, size, std::move(data));
}

Result<ZipAddResult> ZipWriter::AddStream(std::string_view name, std::uint64_t size,
                                          StreamProducer produce) {
  EntryData data;
  data.stream = std::move(produce);
  return impl_->AddStoredLater(name, size, std::move(data));
}

Result<ZipAddResult> ZipWriter::AddBytes(std::string_view name, ByteView data, Compression method,
                                         int level, const ZipAddOptions& add) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  CARTON_RETURN_IF_ERROR(impl_->CheckName(name));
  BytesSource source(data);
  return impl_->Add(name, method, level, data.size(), source, add, {});
}

Status ZipWriter::AddDirectory(std::string_view name) {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  std::string dir(name);
  if (dir.empty() || dir.back() != '/') dir += '/';
  CARTON_RETURN_IF_ERROR(impl_->CheckName(dir));
  Status s = impl_->AddDirectory(dir);
  if (!s.ok()) return impl_->Poison(s);
  return Status::Ok();
}

Status ZipWriter::Finish() {
  CARTON_RETURN_IF_ERROR(impl_->CheckWritable());
  Status s = impl_->Close();
  if (!s.ok()) return impl_->Poison(s);
  impl_->finished = true;
  return Status::Ok();
}

}  // namespace carton
