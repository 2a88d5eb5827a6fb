// ZipWriter: writes the zip container of a .carton with libzip (plus libzstd
// for zstd entries, which libzip 1.7 does not support); the layout it
// produces is described in carton/zip/FORMAT.md.
//
// The subset of the zip format (PKWARE APPNOTE 6.3) written: compression
// methods stored (0), deflate (8) and zstd (93); zip64 for entries, offsets
// and entry counts past the 32-bit limits; no encryption, no data
// descriptors.
//
// Output is deterministic: entries keep insertion order, every entry gets
// the DOS time 1980-01-01 00:00 and fixed Unix attributes (0644 for files,
// 0755 for directories), so the same calls give byte-identical archives.
// The data of every stored entry starts at a multiple of
// ZipWriterOptions::alignment (padding goes into a local-header extra field
// with id 0xD935, which other zip tools ignore), so a reader can map
// tensors in place.
//
// Ownership: ZipWriter owns its temporary output file and a spool for entry
// data (compressed entries and stored entries added from memory wait there
// until Finish(): in memory up to 8 MiB, then in a temporary file next to
// the output that is unlinked as soon as it is created).
//
// Thread-safety: ZipWriter is not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/file_identity.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/compression.h"

namespace carton {

// Largest alignment ZipWriterOptions accepts.
inline constexpr std::uint32_t kZipMaxAlignment = 32768;
struct ZipWriterOptions {
  // The data of every stored entry starts at a multiple of this. A power of
  // two in [1, kZipMaxAlignment]; 4096 gives page-aligned entries.
  std::uint32_t alignment = 64;
  // zstd worker threads; 0 compresses on the calling thread. The output is
  // the same for every value >= 1 (zstd cuts the input into 2 MiB jobs) but
  // differs from the output for 0. Memory grows with workers (about 20 MiB
  // more per worker at the default level).
  int zstd_workers = 0;
  // Threads for large files, beside the calling thread: in Finish() they
  // copy every stored file of 256 KiB or more into its place in the archive
  // (libzip then takes the bytes from them for its CRC-32, one pass over
  // bytes in memory, and does not write them again); in AddFile, a zstd
  // file over kZipBatchFileMax bytes, without ZipAddOptions, is cut into
  // kZipFrameSize pieces compressed as independent zstd frames by these
  // threads and written straight into the archive. 0: the calling thread
  // does everything, and a large zstd entry is one frame (zstd_workers).
  // The archive is the same for every value >= 1 (the frames do not depend
  // on it), but differs from the one written with 0. Memory: about 1 MiB
  // per thread to copy, about 4 MiB per thread to compress.
  unsigned file_threads = 0;
  // With file_threads: large zstd files as frames (as above), or, when
  // false, as one frame through zstd_workers (the bytes written before
  // frames existed; a rebuild of such an archive needs them).
  bool zstd_frames = true;
  // fsync the archive and its directory before Finish() reports success.
  bool durable = false;
  // If set, called on the writing thread with the size of each chunk of
  // entry data the writer reads, each byte once: when an entry is added for
  // the entries compressed or copied then, in Finish() for stored files
  // (AddFileUnread). For progress displays.
  std::function<void(std::uint64_t bytes)> on_read;
};

// Per-entry extras for ZipWriter::AddFile/AddBytes.
struct ZipAddOptions {
  // Computes the SHA-256 of the uncompressed bytes while they are read.
  bool sha256 = false;
  // If set, called with every chunk of the uncompressed bytes, in order, in
  // the same pass that compresses them.
  std::function<void(ByteView)> observer;
};

// Largest file ZipWriter::AddFiles takes: one read, one compression job.
inline constexpr std::uint64_t kZipBatchFileMax = std::uint64_t{4} << 20;
// The uncompressed bytes of each zstd frame of a file compressed on
// ZipWriterOptions::file_threads (the last frame may be shorter).
inline constexpr std::uint64_t kZipFrameSize = std::uint64_t{1} << 20;

// One file for ZipWriter::AddFiles.
struct ZipFileToAdd {
  std::string name;
  std::string source_path;
  Compression method = Compression::kZstd;  // kDeflate or kZstd
  int level = 0;
};

// What ZipWriter::AddFile/AddBytes wrote.
struct ZipAddResult {
  std::uint64_t size = 0;                  // uncompressed bytes
  std::uint64_t compressed_size = 0;       // bytes in the archive
  std::uint32_t crc32 = 0;                 // 0 from AddFileUnread, AddLater
  std::uint64_t data_offset = 0;           // where the entry's bytes start
  std::optional<manifest::Digest> sha256;  // when ZipAddOptions::sha256
  FileIdentity source_identity;            // AddFile*: the file's version
};

class ZipWriter {
 public:
  // Starts an archive at `path`; bytes go to a temporary file in the same
  // directory until Finish() renames it into place.
  // Errors: kInvalidArgument (bad options), kIoError.
  static Result<ZipWriter> Create(const std::string& path, const ZipWriterOptions& options = {});

  ZipWriter(ZipWriter&&) noexcept;
  ZipWriter& operator=(ZipWriter&&) noexcept;
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;
  // Removes the temporary file unless Finish() succeeded.
  ~ZipWriter();

  // Appends the file at `source_path` as entry `name`, streaming it (memory
  // stays bounded whatever the file size). A stored entry's bytes are read
  // again by Finish(), so the file must stay in place, unchanged, until
  // then; Finish() fails with kIoError if its size or CRC-32 changed.
  // `level`: 0 picks the method's
  // default (deflate 6, zstd 2); deflate takes 1..9, zstd
  // ZSTD_minCLevel()..kZipMaxZstdLevel; stored ignores it.
  // Errors: kInvalidArgument (bad name or level, duplicate name),
  // kNotFound (no such source file), kIoError (including a source file that
  // changes size while it is read). An error after bytes were written leaves
  // the writer failed: later calls and Finish() return that error.
  Result<ZipAddResult> AddFile(std::string_view name, const std::string& source_path,
                               Compression method, int level = 0, const ZipAddOptions& add = {});

  // Appends `files` in order, each with the bytes AddFile(name, source_path,
  // method, level, add) would write, but reads, hashes and compresses up to
  // `threads` of them at once (0: one per core; a batch of files in memory
  // at a time) before handing them to the archive in order: for folders of
  // many small files, each a single compression job that would otherwise
  // leave the other cores idle. Each file must be at most kZipBatchFileMax
  // bytes and `add.observer` empty. on_read is called on the calling thread
  // as each file is handed over. Results are in the order of `files`.
  // Errors: kInvalidArgument (a bad or duplicate name, a stored method, a
  // bad level, an observer: nothing is added), then those of AddFile, for
  // the first file that fails; an error after the checks leaves the writer
  // failed.
  Result<std::vector<ZipAddResult>> AddFiles(const std::vector<ZipFileToAdd>& files,
                                             const ZipAddOptions& add = {}, unsigned threads = 0);

  // Appends the file at `source_path` as a stored entry without reading it
  // now: Finish() reads it once, as it writes it (libzip computes the CRC-32
  // of stored bytes then), and fails with kIoError unless the file is still
  // the version seen here, the result's source_identity. The result's crc32
  // is 0 and it has no sha256: a caller that needs the file's hash reads it
  // meanwhile (on another thread, say) and checks that it read that version.
  // Errors: as AddFile.
  Result<ZipAddResult> AddFileUnread(std::string_view name, const std::string& source_path);

  // Produces the bytes of an AddLater entry.
  using Producer = std::function<Result<std::string>()>;

  // Appends a stored entry of exactly `size` bytes that `produce` returns
  // when Finish() reaches it, after every earlier entry is written, so its
  // bytes may come from work done while those are written (a MANIFEST of
  // hashes computed meanwhile). `produce` runs at most once, on the thread
  // calling Finish(), which returns its error, or kInternal if it returns
  // another number of bytes. The result's crc32 is 0. Errors: as AddBytes.
  Result<ZipAddResult> AddLater(std::string_view name, std::uint64_t size, Producer produce);

  // Gives the next bytes of an AddStream entry, from `offset` on: at least
  // one, at most the entry's size minus `offset`, in memory the producer
  // keeps unchanged until it is called again (or Finish() returns). The
  // writer reads them where they are: a producer holding a download's
  // buffers hands them over without a copy.
  using StreamProducer = std::function<Result<ByteView>(std::uint64_t offset)>;

  // Appends a stored entry of exactly `size` bytes that Finish() reads from
  // `produce` piece by piece (in order, each offset once) when it reaches
  // the entry: for bytes that arrive while the archive is written, such as
  // a download, without holding them in memory. `produce` runs on the
  // thread calling Finish(), which returns its error, or kInternal if it
  // gives no bytes or more than are left. The result's crc32 is 0. Errors:
  // as AddBytes.
  Result<ZipAddResult> AddStream(std::string_view name, std::uint64_t size, StreamProducer produce);

  // As AddFile, from memory.
  Result<ZipAddResult> AddBytes(std::string_view name, ByteView data, Compression method,
                                int level = 0, const ZipAddOptions& add = {});

  // Adds a directory entry; a missing trailing '/' is added.
  Status AddDirectory(std::string_view name);

  // Writes the archive (the entries' local headers and data, then the
  // central directory) and renames it into place. After an error nothing is
  // left at the destination or the temporary path.
  Status Finish();

  std::size_t entry_count() const;

 private:
  struct Impl;
  explicit ZipWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton
