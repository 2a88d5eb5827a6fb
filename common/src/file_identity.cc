#include "carton/common/file_identity.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "carton/common/posix_error.h"

namespace carton {

namespace {

FileIdentity IdentityOf(const struct stat& st) {
  constexpr std::int64_t kNs = 1'000'000'000;
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                      static_cast<std::uint64_t>(st.st_size),
                      st.st_mtim.tv_sec * kNs + st.st_mtim.tv_nsec,
                      st.st_ctim.tv_sec * kNs + st.st_ctim.tv_nsec};
}

}  // namespace

Result<FileIdentity> IdentityOfFd(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoIoError(errno, "cannot stat");
  return IdentityOf(st);
}

Result<FileIdentity> IdentityOfPath(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, path + ": cannot stat");
  return IdentityOf(st);
}

}  // namespace carton
