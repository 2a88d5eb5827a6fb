#include "carton/common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "carton/common/posix_error.h"

namespace carton {

Result<FileLock> FileLock::Open(const std::string& path) {
  FileLock lock;
  lock.path_ = path;
  CARTON_RETURN_IF_ERROR(lock.Reopen());
  return lock;
}

Status FileLock::Reopen() {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  if (ec) return IoError(path_ + ": cannot create the lock directory: " + ec.message());
  // Closing the old descriptor releases any lock on it.
  fd_.Reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (!fd_.valid()) return ErrnoIoError(errno, path_ + ": cannot open lock file");
  return Status::Ok();
}

Result<bool> FileLock::Lock(Mode mode, bool wait) {
  int op = (mode == Mode::kShared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB);
  for (;;) {
    if (::flock(fd_.get(), op) != 0) {
      if (errno == EINTR) continue;
      if (errno == EWOULDBLOCK) return false;
      return ErrnoIoError(errno, path_ + ": cannot lock");
    }
    // A lock file is only removed under an exclusive lock, so once we hold
    // a lock on the file that is at the path, it stays there.
    struct stat held, at_path;
    if (::fstat(fd_.get(), &held) != 0) {
      return ErrnoIoError(errno, path_ + ": cannot stat lock file");
    }
    if (::stat(path_.c_str(), &at_path) == 0) {
      if (held.st_dev == at_path.st_dev && held.st_ino == at_path.st_ino) return true;
    } else if (errno != ENOENT) {
      return ErrnoIoError(errno, path_ + ": cannot stat lock file");
    }
    // Removed (and perhaps re-created) while we waited: lock the file that
    // is there now.
    CARTON_RETURN_IF_ERROR(Reopen());
  }
}

void FileLock::Unlock() {
  if (fd_.valid()) ::flock(fd_.get(), LOCK_UN);
}

Status FileLock::RemoveFile() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return ErrnoIoError(errno, path_ + ": cannot remove lock file");
  }
  return Status::Ok();
}

}  // namespace carton
