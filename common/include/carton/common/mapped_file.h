// MappedFile: a read-only memory mapping of a whole file.
//
// Move-only; the mapping lives as long as the MappedFile. Views returned by
// bytes() borrow from it. A zero-length file gives an empty view (no mapping
// is made). The file is mapped MAP_PRIVATE/PROT_READ: if another process
// truncates it while mapped, touching the missing pages raises SIGBUS; that
// is the usual mmap contract and why writers in carton replace files by
// rename instead of rewriting them in place.
//
// Thread-safety: const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton {

// Drops this process's page mappings for the whole pages inside `range`
// (part of a read-only file mapping) without affecting the data: later
// reads fault the pages back in from the page cache. Keeps the resident set
// small while streaming through a large mapping once.
void ReleaseMappedPages(ByteView range);

// The piece ForEachMappedStep hands over: large enough that the calls cost
// nothing, small enough that a piece's pages are still cached when dropped,
// and that 16 threads streaming at once hold 64 MiB of mapped pages at most
// (16 MiB steps took a load on 16 cores over 128 MiB).
inline constexpr std::size_t kMappedStep = std::size_t{4} << 20;

// Calls `fn` on consecutive pieces of `range` (part of a read-only file
// mapping), each at most kMappedStep bytes, and drops each piece's pages
// once `fn` returns (ReleaseMappedPages): streaming once through a mapping
// of any size keeps the resident set small. Stops at, and returns, the
// first error of `fn`.
Status ForEachMappedStep(ByteView range, const std::function<Status(ByteView)>& fn);

class MappedFile {
 public:
  // Maps `path`. Errors: kNotFound if it does not exist, kInvalidArgument if
  // it is not a regular file, kIoError otherwise.
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  ByteView bytes() const { return {data_, size_}; }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The open file (read-only, close-on-exec), for calls that take a
  // descriptor; owned by this object. -1 for a default-constructed one.
  int fd() const { return fd_.get(); }

  // Hints the kernel that the whole file will be read sequentially soon.
  void AdviseSequential() const;

  // Maps the pages of [offset, offset + length) into the process now, in one
  // call, instead of one page fault at a time while reading (worth it when
  // every byte will be read). Reads the file into the page cache if needed.
  // Out-of-range parts are ignored. Errors: kIoError.
  Status Populate(std::uint64_t offset, std::uint64_t length) const;

  // Copies [offset, offset + out.size()) into `out` with pread(2), without
  // touching the mapping: for callers that copy the bytes anyway, this skips
  // the page-table work of a first touch. Errors: kInvalidArgument (out of
  // range), kIoError (including a file that shrank).
  Status ReadAt(std::uint64_t offset, MutableByteView out) const;

 private:
  void Unmap();
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
  UniqueFd fd_;  // kept for ReadAt
};

}  // namespace carton
