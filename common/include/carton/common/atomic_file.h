// AtomicFile: all-or-nothing file output.
//
// Bytes go to a temporary file in the destination's directory (so the final
// rename stays on one filesystem); Commit() flushes and renames it over the
// destination. If Commit() is not reached or fails, the destructor removes the
// temporary file, so readers never see a partial output. The new file gets
// mode 0666 minus the process umask, like any file created by open(2).
// The temporary is registered (temporaries.h) while it exists, so an
// interrupted command removes it too.
//
// Writes are buffered (large writes bypass the buffer). Move-only; not
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/temporaries.h"
#include "carton/common/unique_fd.h"

namespace carton {

struct AtomicFileOptions {
  // fsync the data and the directory before reporting success (survives a
  // power loss, costs time). A process kill is safe either way.
  bool durable = false;
  // Small writes are gathered up to this size; larger ones go straight to
  // the file, in pieces of at most kAtomicFileMaxWrite bytes
  // (kAtomicFilePreallocatedMaxWrite after Preallocate()).
  std::size_t buffer_size = std::size_t{256} << 10;
};

// Largest single write(2): on the machines measured, writes of 1 MiB and
// more that extend the file cost several times the kernel time of 256 KiB
// ones in the page cache (docs/BENCHMARKS.md).
inline constexpr std::size_t kAtomicFileMaxWrite = std::size_t{256} << 10;
// ... but into a file whose length was set by Preallocate(), 1 MiB writes
// cost 7% less CPU than 256 KiB ones (ext4, 1 GiB; docs/BENCHMARKS.md).
inline constexpr std::size_t kAtomicFilePreallocatedMaxWrite = std::size_t{1} << 20;

class AtomicFile {
 public:
  // Creates the temporary file next to `path`. Errors: kIoError (with path).
  static Result<AtomicFile> Create(const std::string& path, const AtomicFileOptions& options = {});

  AtomicFile(AtomicFile&&) noexcept;
  AtomicFile& operator=(AtomicFile&&) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // removes the temporary file unless committed

  Status Write(ByteView data);
  // Writes `data` at `offset` of the temporary file (after the buffered
  // bytes), for writers that go back to fill in what they wrote earlier.
  // Bypasses the buffer; size() counts Write() only.
  Status WriteAt(std::uint64_t offset, ByteView data);
  // For a writer that knows its output's size: sets the file's length to
  // `size` now and reserves its blocks (fallocate(2); ftruncate(2) where the
  // filesystem cannot, and on tmpfs, whose fallocate would zero every page
  // now on the calling thread). The writes that follow then neither extend the file
  // nor allocate blocks one at a time (on ext4 here, 8% less CPU for 1 GiB;
  // docs/BENCHMARKS.md), and a full disk shows before any byte is written.
  // Commit() cuts the file back to the bytes written if they are fewer.
  // Errors: kIoError (with the path), e.g. no space left.
  Status Preallocate(std::uint64_t size);
  // Bytes written so far.
  std::uint64_t size() const { return written_; }
  // The temporary file (open for reading too), for a reader of what is
  // written while it is written (until Commit() or Abort(); -1 after), and
  // how many of the
  // bytes given to Write() have reached it (the rest are in the buffer).
  int fd() const { return fd_.get(); }
  std::uint64_t size_in_file() const { return written_ - buffered_; }
  // Flushes, closes and renames into place. After an error the temporary
  // file is removed and the destination is untouched.
  Status Commit();
  // Removes the temporary file; the destination is untouched.
  void Abort();

  const std::string& path() const { return path_; }

 private:
  AtomicFile() = default;
  Status Flush();
  Status WriteAll(const std::byte* p, std::size_t n);
  std::size_t MaxWrite() const {
    return preallocated_ != 0 ? kAtomicFilePreallocatedMaxWrite : kAtomicFileMaxWrite;
  }

  std::string path_;
  std::string temp_path_;
  UniqueFd fd_;
  TemporaryPath registration_;
  AtomicFileOptions options_;
  std::vector<std::byte> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t written_ = 0;
  std::uint64_t end_ = 0;           // past the last byte written by Write or WriteAt
  std::uint64_t preallocated_ = 0;  // length set by Preallocate
  bool done_ = false;
};

// Checks that `path` can be written as a new file (AtomicFile): not a
// directory, in a directory that exists and can be written. Meant to run
// before any work, so that a mistake costs nothing and the message names
// the user's path, not a temporary file. `what` names the file in the
// hint ("the .carton"). Errors: kInvalidArgument, kNotFound, kIoError.
Status CheckOutputPath(const std::string& path, std::string_view what);

// Writes `data` to `path` atomically.
Status WriteFileAtomically(const std::string& path, ByteView data,
                           const AtomicFileOptions& options = {});

// Reads a whole file. Errors: kNotFound, kIoError.
Result<std::vector<std::byte>> ReadFile(const std::string& path);

}  // namespace carton
