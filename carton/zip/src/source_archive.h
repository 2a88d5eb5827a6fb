// Private: an archive read through a RandomAccessSource (for
// ZipReader::OpenSource), fetching only what it needs: the tail, the
// central directory, and the local header and data of each entry read.
//
// libzip reads at least the last 64 KiB of an archive to open it, and with
// ZIP_CHECKCONS every local header, which over HTTP would cost a request per
// entry; so this reader uses carton's own decoders (records.h) for the
// directory, zlib and libzstd for the data. The checks are those of
// ZipReader::Open, except that a local header is checked against its
// central record (and the next entry's start) when its entry is read, not
// when the archive is opened.
//
// Thread-safety: Decode() may run on several threads if the source allows.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/zip/reader.h"

namespace carton::zip_internal {

struct CentralDirectoryLocation;  // records.h

// Largest central directory read through a source (about 600,000 entries).
inline constexpr std::uint64_t kMaxSourceCentralDirectory = 64ull << 20;
// The first read at the end of the archive; a longer tail (up to the
// largest comment) is read only when the end records are not inside it.
inline constexpr std::uint64_t kSourceTailSize = 8 << 10;

class SourceArchive {
 public:
  // Reads and checks the end records and the central directory.
  // Errors: kCorrupt (naming the entry at fault), kUnsupported, and the
  // source's errors. Messages do not name the source; callers add it.
  static Result<SourceArchive> Open(std::unique_ptr<RandomAccessSource> source);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const RandomAccessSource& source() const { return *source_; }

  // Decodes entry `index` into `sink` after checking its local header,
  // checking the decoded size and CRC-32. REQUIRES: the entry is not
  // encrypted and its method is stored, deflate or zstd. Errors from the
  // sink come back unchanged; others name the entry.
  Status Decode(std::size_t index, const std::function<Status(ByteView)>& sink) const;

 private:
  struct Record {
    std::uint64_t local_header_offset = 0;
    // Where the next entry (or the central directory) starts: the entry's
    // header and data must end by then.
    std::uint64_t limit = 0;
    std::uint16_t flags = 0;
  };
  SourceArchive() = default;

  // Adds the entries of the central directory `dir` (found at `cd`),
  // checking names and that each lies before the directory.
  Status AddEntries(ByteView dir, const CentralDirectoryLocation& cd);
  // Sets each record's limit (the next entry's start), refusing entries
  // that overlap.
  Status SetLimits();
  // Where entry `index`'s data starts, from its local header, checked
  // against its record. Errors do not name the entry.
  Result<std::uint64_t> DataOffset(std::size_t index) const;

  std::unique_ptr<RandomAccessSource> source_;
  std::vector<ZipEntry> entries_;
  std::vector<Record> records_;
};

}  // namespace carton::zip_internal
