// ZipReader: reads the zip container of a .carton (the rules are in
// carton/zip/FORMAT.md), with libzip for mapped archives and carton's own
// decoders for archives read through a RandomAccessSource (plus libzstd for
// zstd entries, which libzip 1.7 does not support).
//
// The subset of the zip format (PKWARE APPNOTE 6.3) read: compression
// methods stored (0), deflate (8) and zstd (93); zip64 for entries, offsets
// and entry counts past the 32-bit limits; no encryption, no multi-disk
// archives.
//
// ZipReader treats the archive as untrusted. Open() parses the central
// directory and every local header and rejects, as kCorrupt naming the entry:
// names that are empty, absolute, contain a backslash, a NUL byte, or an
// empty, "." or ".." component, or otherwise break the path rules of
// manifest::ValidateEntryPath (a trailing '/' marks a directory); duplicate
// names, and names that differ only in ASCII letter case or that use a
// file's name as a directory (they would collide on a case-insensitive file
// system, or on any); entries whose data runs outside the archive or
// overlaps another entry; local headers that disagree with the central
// directory; archives over the limits of ZipReaderOptions (zip bombs). Entries
// that are encrypted or use another compression method are listed but give
// kUnsupported when read. Every read checks the decoded size and the CRC-32.
//
// Ownership: ZipReader owns a mapping of the archive (Open, OpenFile shares
// it), borrows the caller's buffer (OpenBuffer), or owns the
// RandomAccessSource it reads through (OpenSource). Views returned by
// ZipReader::MappedData borrow from that mapping or buffer.
//
// Thread-safety: ZipReader's const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/mapped_file.h"
#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/zip/compression.h"

namespace carton {

// One entry of the central directory.
struct ZipEntry {
  std::string name;
  std::uint64_t index = 0;   // position in the central directory
  std::uint16_t method = 0;  // zip method number; see CompressionFromZipMethod
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;  // uncompressed
  std::uint32_t crc32 = 0;
  bool is_dir = false;      // name ends with '/'
  bool is_symlink = false;  // Unix mode S_IFLNK in the external attributes
  bool encrypted = false;
};

// Defaults of ZipReaderOptions (docs/SECURITY.md lists every limit).
// Read() allocates at most this much for one entry.
inline constexpr std::uint64_t kZipMaxReadSize = std::uint64_t{4} << 30;
// Most entries an archive may list (each costs a ZipEntry and a name).
inline constexpr std::uint64_t kZipMaxEntries = 1'000'000;
// Most bytes all entries together may declare (decode to).
inline constexpr std::uint64_t kZipMaxTotalSize = std::uint64_t{1} << 40;
// Most bytes an entry may declare per compressed byte, by method, once its
// declared size passes kZipRatioMinSize: a little above what the method can
// encode at all, so a larger declared size is a lie. Deflate spends at
// least 2 bits on a 258-byte match (1032 : 1; zlib reaches 1029 on zeros).
// zstd spends at least 4 bytes on a 128 KiB block (an RLE block: 32768 : 1;
// zstd -19 reaches 32532 on 1 GiB of zeros). Stored entries must declare
// their compressed size exactly. Honest bombs stay within these and are
// bounded by the total size, the read size and unpack's free-space check.
inline constexpr std::uint64_t kZipMaxDeflateRatio = 1040;
inline constexpr std::uint64_t kZipMaxZstdRatio = 32800;
inline constexpr std::uint64_t kZipRatioMinSize = std::uint64_t{16} << 20;
// Largest zstd window (log2 bytes) a reader accepts: 64 MiB of decoder
// memory per entry read at once.
inline constexpr int kZipMaxZstdWindowLog = 26;

struct ZipReaderOptions {
  // Read() refuses (kUnsupported) entries larger than this, so a small
  // hostile archive cannot make it allocate gigabytes. ReadTo() streams and
  // is not limited by it; every decoder stops at the entry's declared size.
  std::uint64_t max_read_size = kZipMaxReadSize;
  // Open() refuses (kCorrupt) archives with more entries than this, whose
  // entries declare more than max_total_size bytes in all, or where an
  // entry declares more bytes per compressed byte than its method's ratio
  // limit (max_deflate_ratio, max_zstd_ratio) once its declared size passes
  // ratio_min_size, or where the entries together do so (many small lies).
  // All are checked on the central directory, before anything is decoded.
  // Entries of other methods are never decoded and have no ratio limit.
  std::uint64_t max_entries = kZipMaxEntries;
  std::uint64_t max_total_size = kZipMaxTotalSize;
  std::uint64_t max_deflate_ratio = kZipMaxDeflateRatio;
  std::uint64_t max_zstd_ratio = kZipMaxZstdRatio;
  std::uint64_t ratio_min_size = kZipRatioMinSize;
  // Reading a zstd entry that needs a larger window fails (kUnsupported).
  // At most 31 (zstd's own limit).
  int max_zstd_window_log = kZipMaxZstdWindowLog;
};

class ZipReader {
 public:
  using Sink = std::function<Status(ByteView)>;

  // Maps and validates the archive at `path` (untrusted).
  // Errors: kNotFound, kIoError, kCorrupt (with the entry name when one is
  // at fault), kUnsupported (multi-disk archives).
  static Result<ZipReader> Open(const std::string& path, const ZipReaderOptions& options = {});
  // As Open, over a file already mapped, which the reader shares (the
  // caller may keep using it, e.g. through its descriptor).
  static Result<ZipReader> OpenFile(std::shared_ptr<const MappedFile> file,
                                    const ZipReaderOptions& options = {});
  // As Open, over bytes the caller keeps alive and unchanged for as long as
  // the reader and every view it hands out.
  static Result<ZipReader> OpenBuffer(ByteView archive, const ZipReaderOptions& options = {});
  // Reads the archive through `source` (untrusted), fetching only the tail
  // and the central directory now, and each entry's local header and data
  // when it is read: for remote archives read with HTTP ranges. The same
  // rules hold as for Open(), but a local header is checked against the
  // central directory when its entry is read, so Read/ReadTo may report a
  // corrupt header that Open() would have. MappedData and DataOffset give
  // kInvalidArgument and archive() is empty.
  // Errors: kCorrupt, kUnsupported, and the source's errors.
  static Result<ZipReader> OpenSource(std::unique_ptr<RandomAccessSource> source,
                                      const ZipReaderOptions& options = {});

  ZipReader(ZipReader&&) noexcept;
  ZipReader& operator=(ZipReader&&) noexcept;
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;
  ~ZipReader();

  // In central-directory order.
  const std::vector<ZipEntry>& entries() const;
  // nullptr if there is no entry `name`.
  const ZipEntry* Find(std::string_view name) const;

  // Decodes entry `name`, checking its size and CRC-32.
  // Errors: kNotFound, kUnsupported (encrypted, unknown method, larger than
  // max_read_size, zstd window too large), kCorrupt (bad data, size or CRC).
  Result<std::vector<std::byte>> Read(std::string_view name) const;
  // As Read, handing the decoded bytes to `sink` in chunks. The CRC is only
  // known at the end: the sink may have seen bytes of an entry that then
  // fails. A sink error stops decoding and is returned as is.
  Status ReadTo(std::string_view name, const Sink& sink) const;

  // Offset in the archive of the bytes of stored entry `name`, from its
  // local header. Errors: kNotFound, kInvalidArgument (not stored, or
  // encrypted).
  Result<std::uint64_t> DataOffset(std::string_view name) const;
  // The bytes of stored entry `name`, borrowed from the reader's mapping (or
  // the OpenBuffer buffer). The CRC is not checked (that would touch every
  // page); callers verify with a hash or Read(). Errors: as DataOffset.
  Result<ByteView> MappedData(std::string_view name) const;

  // The whole archive, borrowed as MappedData.
  ByteView archive() const;
  // The mapped archive file (Open, OpenFile), borrowed from the reader: for
  // reading stored entries by descriptor (MappedFile::ReadAt at DataOffset)
  // instead of through the mapping. nullptr for OpenBuffer and OpenSource.
  const MappedFile* file() const;

  // OK when `crc` (UpdateCrc32 over the decoded bytes of `entry`) is the
  // CRC-32 the central directory gives; else kCorrupt "entry "<name>":
  // crc-32 mismatch: the directory says 0x..., the data gives 0x...", the
  // message every reader of the entry gives.
  static Status CheckCrc32(const ZipEntry& entry, std::uint32_t crc);

 private:
  struct Impl;
  explicit ZipReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton
