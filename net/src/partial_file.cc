#include "partial_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/posix_error.h"

namespace carton::net {
namespace {

constexpr std::size_t kReadSize = std::size_t{1} << 20;
// A validator is one header value; anything longer is not one of ours.
constexpr std::size_t kMaxValidator = 1024;

}  // namespace

Result<PartialFile> PartialFile::Open(const std::string& dest) {
  PartialFile f;
  f.dest_ = dest;
  f.path_ = dest + kPartialSuffix;
  f.fd_.Reset(::open(f.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (!f.fd_.valid()) return ErrnoIoError(errno, f.path_ + ": cannot open");
  struct stat st {};
  if (::fstat(f.fd_.get(), &st) != 0) return ErrnoIoError(errno, f.path_ + ": cannot stat");
  if (!S_ISREG(st.st_mode)) return IoError(f.path_ + ": not a regular file");
  f.size_ = static_cast<std::uint64_t>(st.st_size);
  if (::lseek(f.fd_.get(), 0, SEEK_END) < 0) return ErrnoIoError(errno, f.path_ + ": cannot seek");
  auto validator = ReadFile(dest + kValidatorSuffix);
  if (validator.ok() && validator->size() <= kMaxValidator) {
    f.validator_.assign(reinterpret_cast<const char*>(validator->data()), validator->size());
  }
  // Bytes without a validator are still worth resuming (the sha256 decides).
  return f;
}

Status PartialFile::ReadPrefix(const std::function<void(ByteView)>& fn) const {
  std::vector<std::byte> buffer(kReadSize);
  std::uint64_t offset = 0;
  while (offset < size_) {
    const ssize_t n = ::pread(fd_.get(), buffer.data(), buffer.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path_ + ": read failed");
    }
    if (n == 0) return IoError(path_ + ": shrank while it was read");
    fn(ByteView(buffer.data(), static_cast<std::size_t>(n)));
    offset += static_cast<std::uint64_t>(n);
  }
  return Status::Ok();
}

Status PartialFile::Restart() {
  if (::ftruncate(fd_.get(), 0) != 0 || ::lseek(fd_.get(), 0, SEEK_SET) < 0) {
    return ErrnoIoError(errno, path_ + ": cannot truncate");
  }
  size_ = 0;
  validator_.clear();
  ::unlink((dest_ + kValidatorSuffix).c_str());
  return Status::Ok();
}

Status PartialFile::SaveValidator(const std::string& validator) {
  validator_ = validator;
  if (validator.empty()) {
    ::unlink((dest_ + kValidatorSuffix).c_str());
    return Status::Ok();
  }
  return WriteFileAtomically(dest_ + kValidatorSuffix, AsBytes(validator));
}

Status PartialFile::Append(ByteView bytes) {
  const std::byte* p = bytes.data();
  std::size_t n = bytes.size();
  while (n > 0) {
    const ssize_t w = ::write(fd_.get(), p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path_ + ": write failed");
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  size_ += bytes.size();
  return Status::Ok();
}

Status PartialFile::Commit() {
  const int fd = fd_.Release();
  if (::close(fd) != 0) return ErrnoIoError(errno, path_ + ": close failed");
  if (::rename(path_.c_str(), dest_.c_str()) != 0) {
    return ErrnoIoError(errno, dest_ + ": cannot rename the download into place");
  }
  ::unlink((dest_ + kValidatorSuffix).c_str());
  return Status::Ok();
}

void PartialFile::Discard() {
  fd_.Reset();
  ::unlink(path_.c_str());
  ::unlink((dest_ + kValidatorSuffix).c_str());
}

}  // namespace carton::net
