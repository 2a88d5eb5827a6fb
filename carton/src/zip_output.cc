#include "zip_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace carton::zip_internal {
namespace {

constexpr std::size_t kBufferSize = std::size_t{256} << 10;
// Writes at least this large that do not fit the buffer skip it.
constexpr std::size_t kDirectWrite = kBufferSize / 2;

std::string Errno() { return std::strerror(errno); }

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
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

Result<std::unique_ptr<ZipOutput>> ZipOutput::Create(const std::string& path,
                                                     bool durable) {
  if (path.empty()) return InvalidArgument("empty output path");
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty())
    return InvalidArgument(path + ": output path names a directory");
  std::unique_ptr<ZipOutput> out(new ZipOutput());
  out->path_ = path;
  out->durable_ = durable;
  for (int attempt = 0; attempt < 100; ++attempt) {
    // A dot-prefixed name keeps the temporary out of casual listings.
    std::string temp = DirName(path) + "/." + base + ".tmp-" + RandomSuffix();
    int fd =
        ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      out->fd_.Reset(fd);
      out->temp_path_ = std::move(temp);
      out->buffer_.resize(kBufferSize);
      out->done_ = false;
      return out;
    }
    if (errno != EEXIST)
      return IoError(path + ": cannot create temporary file: " + Errno());
  }
  return IoError(path + ": cannot create a unique temporary file");
}

ZipOutput::~ZipOutput() { Abort(); }

Result<SourcePtr> ZipOutput::MakeSource() {
  LibzipError error;
  zip_source_t* src = zip_source_function_create(&Callback, this, error.get());
  if (src == nullptr) return WriteError(error.get(), path_);
  return SourcePtr(src);
}

void ZipOutput::Abort() {
  if (done_) return;
  done_ = true;
  fd_.Reset();
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

Status ZipOutput::PWriteAll(const std::byte* p, std::size_t n,
                            std::uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd_.get(), p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError(path_ + ": write failed: " + Errno());
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    offset += static_cast<std::uint64_t>(w);
  }
  return Status::Ok();
}

Status ZipOutput::Flush() {
  std::size_t n = std::exchange(buffered_, 0);
  return PWriteAll(buffer_.data(), n, buffer_start_);
}

Status ZipOutput::Write(ByteView data) {
  if (done_) return Internal(path_ + ": write after commit or abort");
  const std::uint64_t end = buffer_start_ + buffered_;
  // Appends and rewrites of buffered bytes stay in the buffer.
  if (position_ >= buffer_start_ && position_ <= end &&
      data.size() <= buffer_.size() - (position_ - buffer_start_)) {
    std::size_t at = static_cast<std::size_t>(position_ - buffer_start_);
    if (!data.empty())
      std::memcpy(buffer_.data() + at, data.data(), data.size());
    buffered_ = std::max(buffered_, at + data.size());
  } else {
    CARTON_RETURN_IF_ERROR(Flush());
    if (data.size() >= kDirectWrite) {
      CARTON_RETURN_IF_ERROR(PWriteAll(data.data(), data.size(), position_));
      buffer_start_ = position_ + data.size();
    } else {
      buffer_start_ = position_;
      std::memcpy(buffer_.data(), data.data(), data.size());
      buffered_ = data.size();
    }
  }
  position_ += data.size();
  size_ = std::max(size_, position_);
  return Status::Ok();
}

Status ZipOutput::Commit() {
  if (done_) return Internal(path_ + ": commit after commit or abort");
  Status s = Flush();
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

zip_int64_t ZipOutput::Fail(Status s, int zip_code) {
  int saved = errno;
  if (error_.ok()) error_ = std::move(s);
  zip_error_set(zip_error_.get(), zip_code, saved);
  return -1;
}

zip_int64_t ZipOutput::Callback(void* self, void* data, zip_uint64_t len,
                                zip_source_cmd_t cmd) {
  return static_cast<ZipOutput*>(self)->Handle(data, len, cmd);
}

zip_int64_t ZipOutput::Handle(void* data, zip_uint64_t len,
                              zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_SUPPORTS:
      return ZIP_SOURCE_SUPPORTS_WRITABLE;
    case ZIP_SOURCE_STAT:
      // No archive exists yet: libzip starts a new one.
      zip_error_set(zip_error_.get(), ZIP_ER_READ, ENOENT);
      return -1;
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(zip_error_.get(), data, len);
    case ZIP_SOURCE_BEGIN_WRITE:
      if (done_)
        return Fail(Internal(path_ + ": output already closed"),
                    ZIP_ER_INTERNAL);
      position_ = size_ = buffer_start_ = 0;
      buffered_ = 0;
      return 0;
    case ZIP_SOURCE_WRITE: {
      Status s = Write(ByteView(static_cast<const std::byte*>(data),
                                static_cast<std::size_t>(len)));
      if (!s.ok()) return Fail(std::move(s), ZIP_ER_WRITE);
      return static_cast<zip_int64_t>(len);
    }
    case ZIP_SOURCE_SEEK_WRITE: {
      zip_int64_t to = zip_source_seek_compute_offset(position_, size_, data,
                                                      len, zip_error_.get());
      if (to < 0) return -1;
      position_ = static_cast<std::uint64_t>(to);
      return 0;
    }
    case ZIP_SOURCE_TELL_WRITE:
      return static_cast<zip_int64_t>(position_);
    case ZIP_SOURCE_COMMIT_WRITE: {
      Status s = Commit();
      if (!s.ok()) return Fail(std::move(s), ZIP_ER_WRITE);
      return 0;
    }
    case ZIP_SOURCE_ROLLBACK_WRITE:
      Abort();
      return 0;
    case ZIP_SOURCE_REMOVE:
      // Only asked for an archive without entries, which ZipWriter writes
      // itself; there is nothing at the destination to remove.
      return 0;
    case ZIP_SOURCE_FREE:
      return 0;
    default:
      // Reading back is never needed: the archive is new.
      zip_error_set(zip_error_.get(), ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

}  // namespace carton::zip_internal
