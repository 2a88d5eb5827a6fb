// Advisory whole-file locks (flock(2)) on a lock file, released
// by the kernel when the process dies, so a killed holder never blocks
// others.
//
// Lock files may be removed (loader/FORMAT.md "Lock files"): only by a
// process that holds the lock exclusively, and every Lock() checks after
// locking that the file it locked is still the one at its path, and
// otherwise locks the file now there. So a process that opened a lock file
// just before it was removed never holds a lock that others, who opened
// the new file, do not see.
#pragma once

#include <string>

#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton {

class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Opens (creating it and its directory) the lock file; takes no lock.
  static Result<FileLock> Open(const std::string& path);

  // Takes or converts the lock on the file at path(). With wait == false a
  // held conflicting lock gives false instead of blocking. Errors: kIoError.
  Result<bool> Lock(Mode mode, bool wait = true);
  void Unlock();

  // Unlinks the lock file; the lock stays held until Unlock or destruction,
  // and later lockers create a new file. REQUIRES: Lock(kExclusive) gave
  // true. Errors: kIoError.
  Status RemoveFile();

  const std::string& path() const { return path_; }

 private:
  Status Reopen();

  std::string path_;
  UniqueFd fd_;
};

}  // namespace carton
