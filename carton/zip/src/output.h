// ZipOutput: the file a ZipWriter's archive goes to, as a libzip write
// source.
//
// Bytes go to an AtomicFile: a temporary file next to the destination that
// committing renames into place (after fsync when durable), removed
// otherwise. libzip writes in 8 KiB pieces and seeks
// back to rewrite each local header once the entry's data is written, so
// writes are gathered in a 256 KiB buffer that also absorbs the rewrites
// of small entries' headers; the file sees 256 KiB writes. (Larger writes,
// 1-4 MiB, cost several times more kernel time in the page cache on the
// machines measured; docs/BENCHMARKS.md.)
//
// A large entry's data skips that buffer: its source writes each piece to
// the file itself (WriteThrough) from the buffer it reads into, before
// libzip copies the same piece (libzip must see stored bytes to compute
// their CRC-32); libzip's writes of bytes already written are dropped.
// libzip copies a source's bytes as they are (stored bytes only pass
// through its CRC-32), and before it seeks away from an entry's data (to
// rewrite the local header) it must have written exactly up to the end of
// what was written through, or the write fails. That saves one copy of
// every byte of a large entry.
//
// Not movable (libzip keeps a pointer to it): held by unique_ptr, and it must
// outlive the zip_t opened on its source. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "libzip.h"

namespace carton::zip_internal {

class ZipOutput {
 public:
  // Creates the temporary file. Errors: kInvalidArgument (empty path or a
  // path naming a directory), kIoError.
  static Result<std::unique_ptr<ZipOutput>> Create(const std::string& path, bool durable);

  ZipOutput(const ZipOutput&) = delete;
  ZipOutput& operator=(const ZipOutput&) = delete;
  ~ZipOutput();

  // A source for zip_open_from_source(ZIP_CREATE | ZIP_TRUNCATE): it
  // reports that no archive exists yet, takes libzip's writes and commits
  // or rolls back when libzip says so. Errors: kInternal.
  Result<SourcePtr> MakeSource();

  // Where the next byte written will go (libzip's TELL_WRITE).
  std::uint64_t position() const { return position_; }

  // Sets the file's length to `size` and reserves its blocks
  // (AtomicFile::Preallocate) before libzip writes: `size` must not exceed
  // the archive's final size. Errors: kIoError (with the path), e.g. no
  // space left.
  Status Reserve(std::uint64_t size);
  // Appends `data` without libzip (for the empty archive, which libzip will
  // not write).
  Status Write(ByteView data);

  // Entries of at least this many bytes are written through.
  static constexpr std::uint64_t kWriteThroughMin = std::uint64_t{256} << 10;
  // Writes `data` to the file at `offset` now, ahead of libzip, which will
  // write the same bytes there next: those writes are then dropped.
  // `offset` continues the previous write-through, or is where libzip is
  // about to append. Errors: kInternal (another offset), kIoError.
  Status WriteThrough(std::uint64_t offset, ByteView data);
  // Says that the `size` bytes libzip is about to append at `offset` are
  // in the file already (written by other threads, FileCopier, or before
  // zip_close): libzip's writes of them are dropped. Errors: kInternal
  // (not where libzip appends next).
  Status MarkWritten(std::uint64_t offset, std::uint64_t size);
  // The temporary file, for threads writing entries' data at their places
  // (pwrite); -1 once committed or aborted.
  int fd() const { return file_ ? file_->fd() : -1; }
  // Flushes, closes and renames into place; removes the temporary file on
  // failure.
  Status Commit();
  // Removes the temporary file.
  void Abort();

  // The first failure, with the path and the operating system's reason
  // (libzip keeps only a code); OK if there was none.
  const Status& error() const { return error_; }

  const std::string& path() const { return path_; }

 private:
  ZipOutput() = default;
  static zip_int64_t Callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd);
  zip_int64_t Handle(void* data, zip_uint64_t len, zip_source_cmd_t cmd);
  // Records `s` (the first one wins) and sets libzip's error to `code`
  // with the current errno.
  zip_int64_t Fail(Status s, int zip_code);
  Status Flush();
  // Before libzip seeks away or commits: it wrote the whole range written
  // through, no more and no less.
  Status CloseThrough();

  std::string path_;
  std::optional<AtomicFile> file_;  // empty once committed or aborted
  std::vector<std::byte> buffer_;
  std::uint64_t buffer_start_ = 0;  // file offset of buffer_[0]
  std::size_t buffered_ = 0;        // valid bytes in buffer_
  std::uint64_t position_ = 0;
  std::uint64_t size_ = 0;  // end of the furthest write
  // While open (from the range's first write-through until libzip seeks
  // away), libzip's writes from its position up to through_end_ are bytes
  // already written through: they are dropped.
  std::uint64_t through_end_ = 0;
  bool through_open_ = false;
  Status error_;
  LibzipError zip_error_;
};

}  // namespace carton::zip_internal
