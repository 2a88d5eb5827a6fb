// Spool: where ZipWriter keeps entry data between Add*() and Finish().
//
// libzip writes the archive in zip_close, and must know every compressed
// size before then (ZipWriter needs them to place aligned entries), so
// compressed entries are compressed into the spool when they are added,
// and so is the data of stored entries added from memory, which the caller
// may free afterwards. The spool is an append-only byte store: memory up to
// kSpoolMemoryLimit bytes, then an anonymous temporary file next to the
// output (unlinked as soon as it is created, so nothing is ever left
// behind) written through a 4 MiB buffer.
//
// Move-only; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton::zip_internal {

// Bytes kept in memory before the spool moves to a file.
inline constexpr std::size_t kSpoolMemoryLimit = 8 << 20;

class Spool {
 public:
  // `output_path` names the archive; a file, when needed, goes next to it.
  explicit Spool(std::string output_path);

  Spool(Spool&&) noexcept = default;
  Spool& operator=(Spool&&) noexcept = default;

  // Appends `data`. Errors: kIoError.
  Status Append(ByteView data);
  // Bytes appended so far: the offset of the next Append.
  std::uint64_t size() const { return size_; }

  // Copies the bytes at [offset, offset + out.size()) into `out`.
  // Errors: kIoError, kInternal (a range past size()).
  Status Read(std::uint64_t offset, MutableByteView out) const;

 private:
  Status MoveToFile();
  Status FlushBuffer();

  std::string output_path_;
  std::vector<std::byte> memory_;  // all bytes while there is no file
  UniqueFd fd_;
  std::vector<std::byte> buffer_;  // bytes after `flushed_`, once in a file
  std::uint64_t flushed_ = 0;
  std::uint64_t size_ = 0;
};

}  // namespace carton::zip_internal
