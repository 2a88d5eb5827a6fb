#include "pread_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"

namespace carton::python {
namespace {

class PreadSource final : public RandomAccessSource {
 public:
  PreadSource(UniqueFd fd, std::uint64_t size, std::string path)
      : fd_(std::move(fd)), size_(size), path_(std::move(path)) {}

  std::uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }

  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    if (offset > size_ || out.size() > size_ - offset) {
      return InvalidArgument(path_ + ": read of " + std::to_string(out.size()) + " bytes at " +
                             std::to_string(offset) + " is past the end (" + std::to_string(size_) +
                             " bytes)");
    }
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::pread(fd_.get(), out.data() + done, out.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoIoError(errno, path_ + ": read failed");
      if (n == 0) return IoError(path_ + ": file shrank while reading");
      done += static_cast<std::size_t>(n);
    }
    return Status::Ok();
  }

 private:
  UniqueFd fd_;
  std::uint64_t size_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<RandomAccessSource>> OpenPreadSource(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, path + ": cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoIoError(errno, path + ": cannot stat");
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  return std::unique_ptr<RandomAccessSource>(
      std::make_unique<PreadSource>(std::move(fd), static_cast<std::uint64_t>(st.st_size), path));
}

}  // namespace carton::python
