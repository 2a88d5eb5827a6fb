#include "carton/common/atomic_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <random>
#include <utility>

#include "carton/common/posix_error.h"

namespace carton {
namespace {

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          static_cast<std::uint64_t>(::getpid()));
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(8, 'x');
  for (auto& c : s) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return s;
}

}  // namespace

Result<AtomicFile> AtomicFile::Create(const std::string& path, const AtomicFileOptions& options) {
  if (path.empty()) return InvalidArgument("empty output path");
  AtomicFile f;
  f.path_ = path;
  f.options_ = options;
  for (int attempt = 0; attempt < 100; ++attempt) {
    // A dot-prefixed name keeps the temporary out of casual listings.
    std::string dir = DirName(path);
    std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    std::string temp = dir + "/." + base + ".tmp-" + RandomSuffix();
    // Mode 0666 lets the kernel apply the umask, as for any new file.
    int fd = -1;
    int err = 0;
    f.registration_ = TemporaryPath::Create(temp, TemporaryKind::kFile, [&] {
      fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      err = errno;
      return fd >= 0;
    });
    if (fd >= 0) {
      f.fd_.Reset(fd);
      f.temp_path_ = std::move(temp);
      f.buffer_.resize(options.buffer_size);
      return f;
    }
    if (err != EEXIST) {
      return ErrnoIoError(err, path + ": cannot create temporary file");
    }
  }
  return IoError(path + ": cannot create a unique temporary file");
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : path_(std::move(o.path_)),
      temp_path_(std::move(o.temp_path_)),
      fd_(std::move(o.fd_)),
      registration_(std::move(o.registration_)),
      options_(o.options_),
      buffer_(std::move(o.buffer_)),
      buffered_(std::exchange(o.buffered_, 0)),
      written_(std::exchange(o.written_, 0)),
      end_(std::exchange(o.end_, 0)),
      preallocated_(std::exchange(o.preallocated_, 0)),
      done_(std::exchange(o.done_, true)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    Abort();
    path_ = std::move(o.path_);
    temp_path_ = std::move(o.temp_path_);
    fd_ = std::move(o.fd_);
    registration_ = std::move(o.registration_);
    options_ = o.options_;
    buffer_ = std::move(o.buffer_);
    buffered_ = std::exchange(o.buffered_, 0);
    written_ = std::exchange(o.written_, 0);
    end_ = std::exchange(o.end_, 0);
    preallocated_ = std::exchange(o.preallocated_, 0);
    done_ = std::exchange(o.done_, true);
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abort(); }

void AtomicFile::Abort() {
  if (done_) return;
  done_ = true;
  fd_.Reset();
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  registration_.Release();
}

Status AtomicFile::WriteAll(const std::byte* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_.get(), p, std::min(n, MaxWrite()));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path_ + ": write failed");
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return Status::Ok();
}

Status AtomicFile::Preallocate(std::uint64_t size) {
  if (done_) return Internal(path_ + ": preallocate after commit or abort");
  if (size == 0) return Status::Ok();
  // fallocate(2), not posix_fallocate(3): where the filesystem cannot
  // reserve blocks, glibc's emulation would write the whole size in zeros.
  // tmpfs has no blocks to reserve: its fallocate allocates and zeroes
  // every page now, on this thread, a pass over the whole file before the
  // first write (most of the time the thread writing an 8 GiB archive
  // spent alone while others copied): the length alone is set there.
  struct statfs fs;
  const bool tmpfs = ::fstatfs(fd_.get(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
  int err = EOPNOTSUPP;
  if (!tmpfs) err = ::fallocate(fd_.get(), 0, 0, static_cast<off_t>(size)) == 0 ? 0 : errno;
  if (err == EOPNOTSUPP || err == ENOSYS) {
    err = ::ftruncate(fd_.get(), static_cast<off_t>(size)) == 0 ? 0 : errno;
  }
  if (err != 0) {
    Abort();
    return IoError(path_ + ": cannot reserve " + std::to_string(size) +
                   " bytes: " + std::strerror(err));
  }
  preallocated_ = size;
  return Status::Ok();
}

Status AtomicFile::WriteAt(std::uint64_t offset, ByteView data) {
  if (done_) return Internal(path_ + ": write after commit or abort");
  end_ = std::max(end_, offset + data.size());
  Status s = Flush();
  const std::byte* p = data.data();
  std::size_t n = data.size();
  while (s.ok() && n > 0) {
    ssize_t w = ::pwrite(fd_.get(), p, std::min(n, MaxWrite()), static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      s = ErrnoIoError(errno, path_ + ": write failed");
      break;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    offset += static_cast<std::uint64_t>(w);
  }
  if (!s.ok()) Abort();
  return s;
}

Status AtomicFile::Flush() {
  if (buffered_ == 0) return Status::Ok();
  Status s = WriteAll(buffer_.data(), buffered_);
  buffered_ = 0;
  return s;
}

Status AtomicFile::Write(ByteView data) {
  if (done_) return Internal(path_ + ": write after commit or abort");
  written_ += data.size();
  end_ = std::max(end_, written_);
  if (buffered_ + data.size() <= buffer_.size()) {
    if (!data.empty()) std::memcpy(buffer_.data() + buffered_, data.data(), data.size());
    buffered_ += data.size();
    return Status::Ok();
  }
  Status s = Flush();
  if (s.ok()) {
    if (data.size() >= buffer_.size()) {
      s = WriteAll(data.data(), data.size());
    } else {
      std::memcpy(buffer_.data(), data.data(), data.size());
      buffered_ = data.size();
    }
  }
  if (!s.ok()) Abort();
  return s;
}

Status AtomicFile::Commit() {
  if (done_) return Internal(path_ + ": commit after commit or abort");
  Status s = Flush();
  if (s.ok() && preallocated_ > end_ && ::ftruncate(fd_.get(), static_cast<off_t>(end_)) != 0) {
    s = ErrnoIoError(errno, path_ + ": cannot set the length");
  }
  if (s.ok() && options_.durable && ::fsync(fd_.get()) != 0) {
    s = ErrnoIoError(errno, path_ + ": fsync failed");
  }
  if (s.ok()) {
    int fd = fd_.Release();
    if (::close(fd) != 0) s = ErrnoIoError(errno, path_ + ": close failed");
  }
  if (s.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    s = ErrnoIoError(errno, path_ + ": cannot rename temporary file into place");
  }
  if (!s.ok()) {
    Abort();
    return s;
  }
  done_ = true;
  registration_.Release();
  if (options_.durable) {
    UniqueFd dir(::open(DirName(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.valid()) ::fsync(dir.get());
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, ByteView data,
                           const AtomicFileOptions& options) {
  CARTON_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(path, options));
  CARTON_RETURN_IF_ERROR(f.Write(data));
  return f.Commit();
}

Result<std::vector<std::byte>> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return ErrnoStatus(errno, path + ": cannot open");
  }
  std::vector<std::byte> out;
  struct stat st;
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    out.reserve(static_cast<std::size_t>(st.st_size));
  }
  std::byte buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd.get(), buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path + ": read failed");
    }
    if (r == 0) break;
    out.insert(out.end(), buf, buf + r);
  }
  return out;
}

Status CheckOutputPath(const std::string& path, std::string_view what) {
  namespace fs = std::filesystem;
  if (path.empty()) return InvalidArgument("no output path given");
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return InvalidArgument(path + ": is a directory; give the path of " + std::string(what) +
                           " to write");
  }
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  const fs::file_status st = fs::status(parent, ec);
  if (!fs::exists(st)) {
    return NotFound(path + ": directory " + parent.string() + " does not exist");
  }
  if (!fs::is_directory(st)) {
    return InvalidArgument(path + ": " + parent.string() + " is not a directory");
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    return ErrnoIoError(errno, path + ": cannot write in " + parent.string());
  }
  return Status::Ok();
}

}  // namespace carton
