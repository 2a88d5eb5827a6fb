#include "pread_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"
#include "carton/safetensors/load.h"

namespace carton::safetensors::internal {
namespace {

struct Identity {
  std::uint64_t size = 0;
  std::uint64_t inode = 0;
  std::int64_t mtime_sec = 0;
  std::int64_t mtime_nsec = 0;
  bool operator==(const Identity&) const = default;
};

Identity IdentityOf(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::int64_t>(st.st_mtim.tv_sec),
          static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
}

class FileSource final : public PreadSource {
 public:
  FileSource(std::string path, UniqueFd fd, Identity identity)
      : path_(std::move(path)), fd_(std::move(fd)), identity_(identity) {}

  std::uint64_t size() const override { return identity_.size; }
  const std::string& name() const override { return path_; }

  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    if (!InBounds(offset, out.size(), identity_.size)) {
      return InvalidArgument(path_ + ": read of " + std::to_string(out.size()) + " bytes at " +
                             std::to_string(offset) + " is past the end (" +
                             std::to_string(identity_.size) + " bytes)");
    }
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::pread(fd_.get(), out.data() + done, out.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoIoError(errno, path_ + ": read failed");
      if (n == 0) {
        return IoError(path_ + ": short read: the file ends at " + std::to_string(offset + done) +
                       " but was " + std::to_string(identity_.size) +
                       " bytes when its header was read (truncated while loading)");
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::Ok();
  }

  Status CheckUnchanged() const override {
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) return ErrnoIoError(errno, path_ + ": cannot stat");
    const Identity now = IdentityOf(st);
    if (now == identity_) return Status::Ok();
    return IoError(path_ + ": changed while loading (" + std::to_string(identity_.size) +
                   " bytes when opened, " + std::to_string(now.size) +
                   " now, or a new modification time): the loaded bytes may mix both versions");
  }

 private:
  std::string path_;
  UniqueFd fd_;
  Identity identity_;
};

}  // namespace

Result<std::shared_ptr<PreadSource>> PreadSource::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, path + ": cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoIoError(errno, path + ": cannot stat");
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  return std::shared_ptr<PreadSource>(
      std::make_shared<FileSource>(path, std::move(fd), IdentityOf(st)));
}

}  // namespace carton::safetensors::internal

namespace carton::safetensors {

Result<std::shared_ptr<const RandomAccessSource>> OpenPreadFile(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(std::shared_ptr<internal::PreadSource> source,
                          internal::PreadSource::Open(path));
  return std::shared_ptr<const RandomAccessSource>(std::move(source));
}

}  // namespace carton::safetensors
