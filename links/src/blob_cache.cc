#include "carton/links/blob_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "carton/common/file_lock.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"
#include "carton/links/cache_layout.h"

namespace carton::links {
namespace {

constexpr std::size_t kHashBufferSize = 1 << 20;

const char* NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create cache directory: " + ec.message());
  return Status::Ok();
}

// Removes `path` only if it is still the file `fd` refers to, so a good copy
// renamed into place meanwhile by another process survives.
void DiscardIfSame(const std::string& path, int fd) {
  struct stat open_st {};
  struct stat path_st {};
  if (::fstat(fd, &open_st) == 0 && ::stat(path.c_str(), &path_st) == 0 &&
      open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino) {
    ::unlink(path.c_str());
  }
}

// An exclusive carton::FileLock on a blob's lock file, held until
// destroyed (closing the descriptor releases it). A lock that cannot be
// taken (say, on a filesystem without flock) leaves the object unlocked:
// the atomic rename alone still keeps the cache correct, at the cost of
// duplicate downloads. Without `wait`, busy() tells a lock held by someone
// else.
class BlobLock {
 public:
  BlobLock(const std::string& path, bool wait) {
    auto lock = FileLock::Open(path);
    if (!lock.ok()) return;
    auto got = lock->Lock(FileLock::Mode::kExclusive, wait);
    if (!got.ok()) return;
    busy_ = !*got;
    if (*got) lock_ = std::move(lock).value();
  }

  bool held() const { return lock_.has_value(); }
  bool busy() const { return busy_; }
  // REQUIRES: held().
  void RemoveFile() { (void)lock_->RemoveFile(); }

 private:
  std::optional<FileLock> lock_;
  bool busy_ = false;
};

std::string LockPath(const std::string& root, const std::string& hex) {
  return CacheLayout(root).BlobLockPath(hex);
}

}  // namespace

Result<std::string> DefaultCacheDir() {
  if (const char* dir = NonEmptyEnv("CARTON_CACHE_DIR")) return std::string(dir);
  // The XDG spec says relative paths in XDG_CACHE_HOME are invalid and to be
  // ignored.
  if (const char* xdg = NonEmptyEnv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/carton";
  }
  if (const char* home = NonEmptyEnv("HOME")) return std::string(home) + "/.cache/carton";
  return NotFound("no cache directory: set CARTON_CACHE_DIR, XDG_CACHE_HOME or HOME");
}

BlobCache::BlobCache(std::string root) : root_(std::move(root)) {}

Result<BlobCache> BlobCache::OpenDefault() {
  CARTON_ASSIGN_OR_RETURN(std::string root, DefaultCacheDir());
  return BlobCache(std::move(root));
}

std::string BlobCache::BlobPath(const manifest::Digest& digest) const {
  return CacheLayout(root_).BlobPath(manifest::ToHex(digest));
}

Result<std::string> BlobCache::Get(const manifest::Digest& digest,
                                   std::uint64_t expected_size_or_0) const {
  std::string path = BlobPath(digest);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return ErrnoIoError(errno, path + ": cannot open cached blob");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoIoError(errno, path + ": cannot stat cached blob");
  if (!S_ISREG(st.st_mode)) return IoError(path + ": cached blob is not a regular file");
  if (expected_size_or_0 != 0 && static_cast<std::uint64_t>(st.st_size) != expected_size_or_0) {
    DiscardIfSame(path, fd.get());
    return NotFound(path + ": cached blob has " + std::to_string(st.st_size) + " bytes, expected " +
                    std::to_string(expected_size_or_0) + "; discarded");
  }
  // The mtime is the last use (eviction removes the least recently used
  // first). Best effort: a cache shared read-only still works.
  ::futimens(fd.get(), nullptr);
  return path;
}

Result<std::string> BlobCache::Fetch(const manifest::Digest& digest,
                                     const std::vector<std::string>& urls,
                                     std::uint64_t expected_size_or_0,
                                     const net::FetchOptions& options) const {
  auto hit = Get(digest, expected_size_or_0);
  if (hit.ok() || hit.status().code() != StatusCode::kNotFound) return hit;

  CARTON_RETURN_IF_ERROR(MakeDirs(CacheLayout(root_).BlobsDir()));
  CARTON_RETURN_IF_ERROR(MakeDirs(CacheLayout(root_).LocksDir()));
  BlobLock lock(LockPath(root_, manifest::ToHex(digest)), /*wait=*/true);
  // Whoever held the lock before us may have fetched it already.
  hit = Get(digest, expected_size_or_0);
  if (hit.ok() || hit.status().code() != StatusCode::kNotFound) return hit;

  std::string path = BlobPath(digest);
  // Under the lock, an interrupted download's bytes stay in <hex>.partial
  // and the next fetch resumes from them.
  net::FetchOptions resumable = options;
  resumable.keep_partial = true;
  CARTON_RETURN_IF_ERROR(net::FetchToFile(urls, digest, expected_size_or_0, path, resumable));
  return path;
}

Status BlobCache::Verify(const manifest::Digest& digest, std::uint64_t expected_size_or_0) const {
  const std::string path = BlobPath(digest);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return ErrnoIoError(errno, path + ": cannot open cached blob");
  }
  manifest::Sha256 hasher;
  std::vector<std::byte> buffer(kHashBufferSize);
  std::uint64_t size = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path + ": cannot read cached blob");
    }
    if (n == 0) break;
    hasher.Update(ByteView(buffer.data(), static_cast<std::size_t>(n)));
    size += static_cast<std::uint64_t>(n);
  }
  if (expected_size_or_0 != 0 && size != expected_size_or_0) {
    DiscardIfSame(path, fd.get());
    return Corrupt(path + ": cached blob has " + std::to_string(size) + " bytes, expected " +
                   std::to_string(expected_size_or_0) + "; discarded");
  }
  const manifest::Digest got = hasher.Finish();
  if (got != digest) {
    DiscardIfSame(path, fd.get());
    return Corrupt(path + ": cached blob has sha256 " + manifest::ToHex(got) + "; discarded");
  }
  return Status::Ok();
}

Result<std::vector<BlobInfo>> BlobCache::List() const {
  std::vector<BlobInfo> out;
  const std::string dir = CacheLayout(root_).BlobsDir();
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return IoError(dir + ": cannot list: " + ec.message());
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    auto digest = manifest::ParseHex(name);
    if (!digest) continue;  // temporary files of fetches in progress
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    BlobInfo b;
    b.digest = *digest;
    b.path = it->path().string();
    b.size = static_cast<std::uint64_t>(st.st_size);
    b.last_used = st.st_mtim.tv_sec;
    b.links = static_cast<std::uint64_t>(st.st_nlink);
    out.push_back(std::move(b));
  }
  if (ec) return IoError(dir + ": cannot list: " + ec.message());
  return out;
}

Status BlobCache::Remove(const manifest::Digest& digest) const {
  const std::string path = BlobPath(digest);
  const std::string hex = manifest::ToHex(digest);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return ErrnoIoError(errno, path + ": cannot stat cached blob");
  }
  CARTON_RETURN_IF_ERROR(MakeDirs(CacheLayout(root_).LocksDir()));
  BlobLock lock(LockPath(root_, hex), /*wait=*/false);
  if (lock.busy()) return InvalidArgument(hex + ": the blob is being fetched");
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return ErrnoIoError(errno, path + ": cannot remove cached blob");
  }
  if (lock.held()) lock.RemoveFile();
  return Status::Ok();
}

Result<std::vector<PartialBlob>> BlobCache::ListPartials() const {
  std::vector<PartialBlob> out;
  const std::string dir = CacheLayout(root_).BlobsDir();
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return IoError(dir + ": cannot list: " + ec.message());
  }
  const std::string_view suffix = net::kPartialSuffix;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != 64 + suffix.size() || !name.ends_with(suffix)) continue;
    auto digest = manifest::ParseHex(name.substr(0, 64));
    if (!digest) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    PartialBlob p;
    p.digest = *digest;
    p.path = it->path().string();
    p.size = static_cast<std::uint64_t>(st.st_size);
    p.last_modified = st.st_mtim.tv_sec;
    BlobLock lock(LockPath(root_, name.substr(0, 64)), /*wait=*/false);
    p.in_use = lock.busy();
    out.push_back(std::move(p));
  }
  if (ec) return IoError(dir + ": cannot list: " + ec.message());
  return out;
}

std::vector<PartialBlob> BlobCache::RemoveStalePartials() const {
  std::vector<PartialBlob> removed;
  auto partials = ListPartials();
  if (!partials.ok()) return removed;
  if (MakeDirs(CacheLayout(root_).LocksDir()).ok()) {
    for (PartialBlob& p : *partials) {
      const std::string hex = manifest::ToHex(p.digest);
      BlobLock lock(LockPath(root_, hex), /*wait=*/false);
      // A fetch of this blob holds the lock while it writes the file.
      if (!lock.held()) continue;
      ::unlink(p.path.c_str());
      ::unlink((BlobPath(p.digest) + net::kValidatorSuffix).c_str());
      if (::access(BlobPath(p.digest).c_str(), F_OK) != 0) lock.RemoveFile();
      removed.push_back(std::move(p));
    }
  }
  // Temporaries of fetches killed without a chance to clean up (kill -9,
  // a crash): ".<hex>.tmp-*" files whose blob's lock is free.
  const std::string dir = CacheLayout(root_).BlobsDir();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 1 + 64 + 5 || name[0] != '.' || name.compare(65, 5, ".tmp-") != 0) continue;
    auto digest = manifest::ParseHex(name.substr(1, 64));
    if (!digest) continue;
    BlobLock lock(LockPath(root_, name.substr(1, 64)), /*wait=*/false);
    if (lock.held()) ::unlink(it->path().c_str());
  }
  return removed;
}

void BlobCache::RemoveStaleLocks() const {
  const std::string dir = CacheLayout(root_).LocksDir();
  constexpr std::string_view kPrefix = kBlobLockPrefix;
  constexpr std::string_view kSuffix = ".lock";
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != kPrefix.size() + 64 + kSuffix.size() || !name.starts_with(kPrefix) ||
        !name.ends_with(kSuffix)) {
      continue;
    }
    auto digest = manifest::ParseHex(name.substr(kPrefix.size(), 64));
    if (!digest) continue;
    const std::string blob = BlobPath(*digest);
    if (::access(blob.c_str(), F_OK) == 0) continue;
    BlobLock lock(it->path().string(), /*wait=*/false);
    // Under the lock no fetch of this blob is running; one may have
    // finished just before.
    if (lock.held() && ::access(blob.c_str(), F_OK) != 0) lock.RemoveFile();
  }
}

}  // namespace carton::links
