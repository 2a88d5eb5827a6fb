#include "carton/common/pread_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "carton/common/fd_io.h"
#include "carton/common/posix_error.h"

namespace carton {

PreadFile::PreadFile(std::string path, UniqueFd fd, FileIdentity identity)
    : path_(std::move(path)), fd_(std::move(fd)), identity_(identity) {}

Result<std::shared_ptr<PreadFile>> PreadFile::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, path + ": cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoIoError(errno, path + ": cannot stat");
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  Result<FileIdentity> identity = IdentityOfFd(fd.get());
  if (!identity.ok()) return identity.status().WithContext(path);
  return std::make_shared<PreadFile>(path, std::move(fd), *identity);
}

Status PreadFile::ReadAt(std::uint64_t offset, MutableByteView out) const {
  if (offset > identity_.size || out.size() > identity_.size - offset) {
    return InvalidArgument(path_ + ": read of " + std::to_string(out.size()) + " bytes at " +
                           std::to_string(offset) + " is past the end (" +
                           std::to_string(identity_.size) + " bytes)");
  }
  CARTON_ASSIGN_OR_RETURN(std::size_t done, PreadFull(fd_.get(), offset, out, path_));
  if (done != out.size()) {
    return IoError(path_ + ": short read: the file ends at " + std::to_string(offset + done) +
                   " but was " + std::to_string(identity_.size) +
                   " bytes when opened (it shrank while being read)");
  }
  return Status::Ok();
}

Status PreadFile::CheckUnchanged() const {
  Result<FileIdentity> now = IdentityOfFd(fd_.get());
  if (!now.ok()) return now.status().WithContext(path_);
  // Not the change time: linking, unlinking, renaming or chmod set it too,
  // and leave the bytes as they were (a cache may link a file being read).
  if (now->dev == identity_.dev && now->ino == identity_.ino && now->size == identity_.size &&
      now->mtime_ns == identity_.mtime_ns) {
    return Status::Ok();
  }
  return IoError(path_ + ": changed while loading (" + std::to_string(identity_.size) +
                 " bytes when opened, " + std::to_string(now->size) +
                 " now, or a new modification time): the loaded bytes may mix both versions");
}

}  // namespace carton
