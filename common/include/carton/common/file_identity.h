// FileIdentity: which version of a file's contents a descriptor or path
// names, so that two reads of one file can be shown to have read the same
// bytes.
//
// A write to a file always updates its change time (ctime), which no user
// can set back; with the device, inode, size and modification time, equal
// identities before and after a read mean the file did not change. Values,
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "carton/common/status.h"

namespace carton {

struct FileIdentity {
  std::uint64_t dev = 0, ino = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The identity of the open file `fd` (fstat). Errors: kIoError, with the
// operating system's reason; callers add the path.
Result<FileIdentity> IdentityOfFd(int fd);
// The identity of the file at `path` (stat, following symlinks).
// Errors: kNotFound, kIoError, with the path.
Result<FileIdentity> IdentityOfPath(const std::string& path);

}  // namespace carton
