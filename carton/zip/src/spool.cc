#include "spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "carton/common/fd_io.h"
#include "carton/common/posix_error.h"

namespace carton::zip_internal {
namespace {

constexpr std::size_t kFileBuffer = 4 << 20;

std::string SpoolPathFor(const std::string& output_path) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          static_cast<std::uint64_t>(::getpid()));
  auto slash = output_path.rfind('/');
  std::string dir = slash == std::string::npos
                        ? std::string(".")
                        : output_path.substr(0, std::max<std::size_t>(slash, 1));
  std::string base = slash == std::string::npos ? output_path : output_path.substr(slash + 1);
  return dir + "/." + base + ".spool-" + std::to_string(rng() % 1000000000);
}

}  // namespace

Spool::Spool(std::string output_path) : output_path_(std::move(output_path)) {}

Status Spool::MoveToFile() {
  for (int attempt = 0; attempt < 100 && !fd_.valid(); ++attempt) {
    std::string path = SpoolPathFor(output_path_);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return ErrnoIoError(errno, output_path_ + ": cannot create a spool file");
    }
    // Only the descriptor is needed: unlinked now, the file goes away with
    // it whatever happens to the process.
    ::unlink(path.c_str());
    fd_.Reset(fd);
  }
  if (!fd_.valid()) return IoError(output_path_ + ": cannot create a unique spool file");
  buffer_ = std::move(memory_);
  memory_ = {};
  flushed_ = 0;
  CARTON_RETURN_IF_ERROR(FlushBuffer());
  // The memory buffer may have grown past the file buffer's size.
  std::vector<std::byte>().swap(buffer_);  // freed: `= {}` keeps the capacity
  return Status::Ok();
}

Status Spool::FlushBuffer() {
  CARTON_RETURN_IF_ERROR(PwriteFull(fd_.get(), flushed_, buffer_, output_path_ + ": spool"));
  flushed_ += buffer_.size();
  buffer_.clear();
  return Status::Ok();
}

Status Spool::Append(ByteView data) {
  if (!fd_.valid()) {
    if (memory_.size() + data.size() <= kSpoolMemoryLimit) {
      memory_.insert(memory_.end(), data.begin(), data.end());
      size_ += data.size();
      return Status::Ok();
    }
    CARTON_RETURN_IF_ERROR(MoveToFile());
    buffer_.reserve(kFileBuffer);
  }
  while (!data.empty()) {
    std::size_t n = std::min(data.size(), kFileBuffer - buffer_.size());
    buffer_.insert(buffer_.end(), data.begin(), data.begin() + n);
    data = data.subspan(n);
    size_ += n;
    if (buffer_.size() == kFileBuffer) CARTON_RETURN_IF_ERROR(FlushBuffer());
  }
  return Status::Ok();
}

Status Spool::Read(std::uint64_t offset, MutableByteView out) const {
  if (!InBounds(offset, out.size(), size_)) {
    return Internal(output_path_ + ": spool read past its end");
  }
  if (!fd_.valid()) {
    if (!out.empty()) std::memcpy(out.data(), memory_.data() + offset, out.size());
    return Status::Ok();
  }
  // The part already in the file, then the part still in the buffer.
  const std::size_t in_file = static_cast<std::size_t>(
      offset < flushed_ ? std::min<std::uint64_t>(out.size(), flushed_ - offset) : 0);
  if (in_file != 0) {
    CARTON_ASSIGN_OR_RETURN(std::size_t got, PreadFull(fd_.get(), offset, out.first(in_file),
                                                       output_path_ + ": spool"));
    if (got != in_file) return IoError(output_path_ + ": spool file is truncated");
  }
  const std::size_t rest = out.size() - in_file;
  if (rest > 0)
    std::memcpy(out.data() + in_file, buffer_.data() + (offset + in_file - flushed_), rest);
  return Status::Ok();
}

}  // namespace carton::zip_internal
