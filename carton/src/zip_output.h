// ZipOutput: the buffered, seekable, all-or-nothing file a ZipWriter writes.
//
// Like AtomicFile (bytes go to a temporary file next to the destination and
// Commit() renames it into place; otherwise the destructor removes it), plus
// WriteAt() so a local header can be rewritten once its entry's CRC and
// sizes are known, and WriteAsync() so the caller can compute the next
// chunk's CRC while the previous chunk is being written. Writes are gathered
// into a 4 MiB buffer; large writes go straight to the file. Move-only; not
// thread-safe (the one background write is internal).
#pragma once

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton::zip_internal {

class ZipOutput {
 public:
  // Errors: kInvalidArgument (empty path), kIoError.
  static Result<ZipOutput> Create(const std::string& path, bool durable);

  ZipOutput(ZipOutput&&) noexcept;
  ZipOutput& operator=(ZipOutput&&) noexcept;
  ZipOutput(const ZipOutput&) = delete;
  ZipOutput& operator=(const ZipOutput&) = delete;
  ~ZipOutput();

  // Appends `data`.
  Status Write(ByteView data);
  // Appends `data`, possibly on a background thread: `data` must stay valid
  // and unchanged until the next call on this object, which waits for the
  // write and reports its error.
  Status WriteAsync(ByteView data);
  // Overwrites bytes already written. REQUIRES: offset + data.size() <=
  // position().
  Status WriteAt(std::uint64_t offset, ByteView data);
  // Bytes written so far: the offset of the next Write.
  std::uint64_t position() const {
    return flushed_ + pending_size_ + buffered_;
  }

  // Flushes, closes and renames into place; removes the temporary file on
  // failure.
  Status Commit();
  // Removes the temporary file.
  void Abort();

  const std::string& path() const { return path_; }

 private:
  ZipOutput() = default;
  Status Flush();
  Status WriteAll(const std::byte* p, std::size_t n);
  // Waits for the background write, if any.
  Status Wait();

  std::string path_;
  std::string temp_path_;
  UniqueFd fd_;
  bool durable_ = false;
  bool done_ = true;
  std::vector<std::byte> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t flushed_ = 0;  // bytes already in the file
  std::future<Status> pending_;
  std::uint64_t pending_size_ = 0;
};

}  // namespace carton::zip_internal
