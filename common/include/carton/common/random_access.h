// RandomAccessSource: bytes that can be read at any offset, such as a local
// file or a remote file read with HTTP range requests. ZipReader::OpenSource
// reads an archive through one, fetching only the parts it needs.
//
// Implementations say what they fetch and cache; ReadAt() fills the whole
// buffer or fails. Thread-safety: ReadAt() may be called from several
// threads at once (implementations serialise internally when they must).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "carton/common/bytes.h"
#include "carton/common/mapped_file.h"
#include "carton/common/status.h"

namespace carton {

class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;

  // Total size in bytes.
  virtual std::uint64_t size() const = 0;
  // What to call the source in messages (a path or URL).
  virtual const std::string& name() const = 0;
  // Reads exactly out.size() bytes at `offset`.
  // Errors: kInvalidArgument (past the end), kIoError, kNetworkError.
  virtual Status ReadAt(std::uint64_t offset, MutableByteView out) const = 0;
};

// A source over a local file, read with pread(2).
// Errors: kNotFound, kInvalidArgument (not a regular file), kIoError.
Result<std::unique_ptr<RandomAccessSource>> OpenFileSource(const std::string& path);
// The same over a file already open, which the source shares.
std::unique_ptr<RandomAccessSource> FileSourceOf(std::shared_ptr<const MappedFile> file);

}  // namespace carton
