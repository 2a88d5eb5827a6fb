#include "zip_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <system_error>
#include <utility>

namespace carton::zip_internal {
namespace {

constexpr std::size_t kBufferSize = 4 << 20;
// Writes at least this large skip the buffer.
constexpr std::size_t kDirectWrite = kBufferSize / 2;

std::string Errno() { return std::strerror(errno); }

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteFd(int fd, const std::byte* p, std::size_t n,
               const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": write failed: " + Errno());
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return Status::Ok();
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(
      std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()));
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(8, 'x');
  for (auto& c : s) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return s;
}

}  // namespace

Result<ZipOutput> ZipOutput::Create(const std::string& path, bool durable) {
  if (path.empty()) return InvalidArgument("empty output path");
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty())
    return InvalidArgument(path + ": output path names a directory");
  ZipOutput out;
  out.path_ = path;
  out.durable_ = durable;
  for (int attempt = 0; attempt < 100; ++attempt) {
    // A dot-prefixed name keeps the temporary out of casual listings.
    std::string temp = DirName(path) + "/." + base + ".tmp-" + RandomSuffix();
    int fd =
        ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      out.fd_.Reset(fd);
      out.temp_path_ = std::move(temp);
      out.buffer_.resize(kBufferSize);
      out.done_ = false;
      return out;
    }
    if (errno != EEXIST)
      return IoError(path + ": cannot create temporary file: " + Errno());
  }
  return IoError(path + ": cannot create a unique temporary file");
}

ZipOutput::ZipOutput(ZipOutput&& o) noexcept
    : path_(std::move(o.path_)),
      temp_path_(std::move(o.temp_path_)),
      fd_(std::move(o.fd_)),
      durable_(o.durable_),
      done_(std::exchange(o.done_, true)),
      buffer_(std::move(o.buffer_)),
      buffered_(std::exchange(o.buffered_, 0)),
      flushed_(std::exchange(o.flushed_, 0)),
      pending_(std::move(o.pending_)),
      pending_size_(std::exchange(o.pending_size_, 0)) {}

ZipOutput& ZipOutput::operator=(ZipOutput&& o) noexcept {
  if (this != &o) {
    Abort();
    path_ = std::move(o.path_);
    temp_path_ = std::move(o.temp_path_);
    fd_ = std::move(o.fd_);
    durable_ = o.durable_;
    done_ = std::exchange(o.done_, true);
    buffer_ = std::move(o.buffer_);
    buffered_ = std::exchange(o.buffered_, 0);
    flushed_ = std::exchange(o.flushed_, 0);
    pending_ = std::move(o.pending_);
    pending_size_ = std::exchange(o.pending_size_, 0);
  }
  return *this;
}

ZipOutput::~ZipOutput() { Abort(); }

void ZipOutput::Abort() {
  if (pending_.valid()) pending_.wait();
  pending_ = {};
  pending_size_ = 0;
  if (done_) return;
  done_ = true;
  fd_.Reset();
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

Status ZipOutput::WriteAll(const std::byte* p, std::size_t n) {
  CARTON_RETURN_IF_ERROR(WriteFd(fd_.get(), p, n, path_));
  flushed_ += n;
  return Status::Ok();
}

Status ZipOutput::Wait() {
  if (!pending_.valid()) return Status::Ok();
  Status s = pending_.get();
  flushed_ += std::exchange(pending_size_, 0);
  return s;
}

Status ZipOutput::Flush() {
  std::size_t n = std::exchange(buffered_, 0);
  return WriteAll(buffer_.data(), n);
}

Status ZipOutput::Write(ByteView data) {
  if (done_) return Internal(path_ + ": write after commit or abort");
  CARTON_RETURN_IF_ERROR(Wait());
  if (buffered_ + data.size() > buffer_.size() || data.size() >= kDirectWrite) {
    CARTON_RETURN_IF_ERROR(Flush());
  }
  if (data.size() >= kDirectWrite) return WriteAll(data.data(), data.size());
  if (!data.empty())
    std::memcpy(buffer_.data() + buffered_, data.data(), data.size());
  buffered_ += data.size();
  return Status::Ok();
}

Status ZipOutput::WriteAsync(ByteView data) {
  if (done_) return Internal(path_ + ": write after commit or abort");
  if (data.size() < kDirectWrite) return Write(data);
  CARTON_RETURN_IF_ERROR(Wait());
  CARTON_RETURN_IF_ERROR(Flush());
  try {
    pending_ =
        std::async(std::launch::async, [fd = fd_.get(), data, path = path_] {
          return WriteFd(fd, data.data(), data.size(), path);
        });
  } catch (const std::system_error&) {
    // No thread to be had: write here instead.
    return WriteAll(data.data(), data.size());
  }
  pending_size_ = data.size();
  return Status::Ok();
}

Status ZipOutput::WriteAt(std::uint64_t offset, ByteView data) {
  if (done_) return Internal(path_ + ": write after commit or abort");
  CARTON_RETURN_IF_ERROR(Wait());
  if (!InBounds(offset, data.size(), position())) {
    return Internal(path_ + ": rewrite past the end of the output");
  }
  // The part before the buffer is already in the file.
  if (offset < flushed_) {
    std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>(data.size(), flushed_ - offset));
    const std::byte* p = data.data();
    std::size_t left = n;
    std::uint64_t at = offset;
    while (left > 0) {
      ssize_t w = ::pwrite(fd_.get(), p, left, static_cast<off_t>(at));
      if (w < 0) {
        if (errno == EINTR) continue;
        return IoError(path_ + ": write failed: " + Errno());
      }
      p += w;
      left -= static_cast<std::size_t>(w);
      at += static_cast<std::uint64_t>(w);
    }
    data = data.subspan(n);
    offset += n;
  }
  if (!data.empty())
    std::memcpy(buffer_.data() + (offset - flushed_), data.data(), data.size());
  return Status::Ok();
}

Status ZipOutput::Commit() {
  if (done_) return Internal(path_ + ": commit after commit or abort");
  Status s = Wait();
  if (s.ok()) s = Flush();
  if (s.ok() && durable_ && ::fsync(fd_.get()) != 0) {
    s = IoError(path_ + ": fsync failed: " + Errno());
  }
  if (s.ok() && ::close(fd_.Release()) != 0)
    s = IoError(path_ + ": close failed: " + Errno());
  if (s.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    s = IoError(path_ +
                ": cannot rename temporary file into place: " + Errno());
  }
  if (!s.ok()) {
    Abort();
    return s;
  }
  done_ = true;
  if (durable_) {
    UniqueFd dir(
        ::open(DirName(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.valid()) ::fsync(dir.get());
  }
  return Status::Ok();
}

}  // namespace carton::zip_internal
