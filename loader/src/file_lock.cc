#include "file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace carton::loader::internal {

Result<FileLock> FileLock::Open(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return IoError(path + ": cannot create the lock directory: " + ec.message());
  FileLock lock;
  lock.path_ = path;
  lock.fd_.Reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (!lock.fd_.valid()) return IoError(path + ": cannot open lock file: " + std::strerror(errno));
  return lock;
}

Result<bool> FileLock::Lock(Mode mode, bool wait) {
  int op = (mode == Mode::kShared ? LOCK_SH : LOCK_EX) | (wait ? 0 : LOCK_NB);
  for (;;) {
    if (::flock(fd_.get(), op) == 0) return true;
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return false;
    return IoError(path_ + ": cannot lock: " + std::strerror(errno));
  }
}

void FileLock::Unlock() {
  if (fd_.valid()) ::flock(fd_.get(), LOCK_UN);
}

}  // namespace carton::loader::internal
