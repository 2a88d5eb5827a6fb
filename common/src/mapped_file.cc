#include "carton/common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "carton/common/unique_fd.h"

namespace carton {

Result<MappedFile> MappedFile::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    std::string msg = path + ": cannot open: " + std::strerror(err);
    if (err == ENOENT) return NotFound(std::move(msg));
    return IoError(std::move(msg));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return IoError(path + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(path + ": not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<std::size_t>(st.st_size);
  if (f.size_ == 0) return f;
  void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) {
    return IoError(path + ": cannot map: " + std::strerror(errno));
  }
  f.data_ = static_cast<const std::byte*>(p);
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      path_(std::move(o.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    Unmap();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    path_ = std::move(o.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }
}

void MappedFile::AdviseSequential() const {
  if (data_ != nullptr) {
    auto* p = const_cast<std::byte*>(data_);
    ::madvise(p, size_, MADV_SEQUENTIAL);
    ::madvise(p, size_, MADV_WILLNEED);
  }
}

}  // namespace carton
