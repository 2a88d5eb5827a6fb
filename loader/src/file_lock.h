// Private: advisory whole-file locks (flock(2)) on a lock file, released
// by the kernel when the process dies, so a killed holder never blocks
// others.
#pragma once

#include <string>

#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton::loader::internal {

class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Opens (creating it and its directory) the lock file; takes no lock.
  static Result<FileLock> Open(const std::string& path);

  // Takes or converts the lock. With wait == false a held conflicting lock
  // gives false instead of blocking. Errors: kIoError.
  Result<bool> Lock(Mode mode, bool wait = true);
  void Unlock();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  UniqueFd fd_;
};

}  // namespace carton::loader::internal
