#include "carton/common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <utility>

#include "carton/common/fd_io.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"

namespace carton {

Result<MappedFile> MappedFile::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, path + ": cannot open");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoIoError(errno, path + ": cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(path + ": not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<std::size_t>(st.st_size);
  if (f.size_ == 0) {
    f.fd_ = std::move(fd);
    return f;
  }
  void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) {
    return ErrnoIoError(errno, path + ": cannot map");
  }
  f.data_ = static_cast<const std::byte*>(p);
  f.fd_ = std::move(fd);
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      path_(std::move(o.path_)),
      fd_(std::move(o.fd_)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    Unmap();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    path_ = std::move(o.path_);
    fd_ = std::move(o.fd_);
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

Status ForEachMappedStep(ByteView range, const std::function<Status(ByteView)>& fn) {
  for (std::size_t off = 0; off < range.size(); off += kMappedStep) {
    const ByteView step = range.subspan(off, std::min(kMappedStep, range.size() - off));
    Status s = fn(step);
    ReleaseMappedPages(step);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void ReleaseMappedPages(ByteView range) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<std::uintptr_t>(range.data());
  auto end = begin + range.size();
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Status MappedFile::ReadAt(std::uint64_t offset, MutableByteView out) const {
  if (!InBounds(offset, out.size(), size_)) {
    return InvalidArgument(path_ + ": read of " + std::to_string(out.size()) + " bytes at " +
                           std::to_string(offset) + " is past the end (" + std::to_string(size_) +
                           " bytes)");
  }
  CARTON_ASSIGN_OR_RETURN(std::size_t done, PreadFull(fd_.get(), offset, out, path_));
  if (done != out.size()) return IoError(path_ + ": file shrank while reading");
  return Status::Ok();
}

Status MappedFile::Populate(std::uint64_t offset, std::uint64_t length) const {
  if (data_ == nullptr || offset >= size_) return Status::Ok();
  length = std::min<std::uint64_t>(length, size_ - offset);
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t start = offset / page * page;
  auto* p = const_cast<std::byte*>(data_) + start;
  const std::size_t n = static_cast<std::size_t>(offset - start + length);
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif
  if (::madvise(p, n, MADV_POPULATE_READ) == 0) return Status::Ok();
  if (errno == EINVAL) {
    // Older kernel: fall back to read-ahead, which still avoids waiting on
    // the disk at each fault.
    ::madvise(p, n, MADV_WILLNEED);
    return Status::Ok();
  }
  return ErrnoIoError(errno, path_ + ": cannot read pages in");
}

}  // namespace carton
