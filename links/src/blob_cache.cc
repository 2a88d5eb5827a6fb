#include "carton/links/blob_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "carton/common/unique_fd.h"

namespace carton::links {
namespace {

constexpr char kBlobDir[] = "blobs/sha256";
constexpr char kLockDir[] = "locks";
constexpr std::size_t kHashBufferSize = 1 << 20;

std::string Errno() { return std::strerror(errno); }

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

// Holds an exclusive advisory lock on a file until destroyed. flock() locks
// belong to the open file description, so they exclude threads of one
// process as well as other processes.
class FileLock {
 public:
  // Blocks until the lock is held. A lock that cannot be taken (say, on a
  // filesystem without flock) leaves the object unlocked: the atomic rename
  // alone still keeps the cache correct, at the cost of duplicate downloads.
  explicit FileLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
    if (!fd_.valid()) return;
    while (::flock(fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) {
        fd_.Reset();
        return;
      }
    }
  }
  // Closing the descriptor releases the lock.

 private:
  UniqueFd fd_;
};

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
  return root_ + "/" + kBlobDir + "/" + manifest::ToHex(digest);
}

Result<std::string> BlobCache::Get(const manifest::Digest& digest,
                                   std::uint64_t expected_size_or_0) const {
  std::string path = BlobPath(digest);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return IoError(path + ": cannot open cached blob: " + Errno());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError(path + ": cannot stat cached blob: " + Errno());
  if (!S_ISREG(st.st_mode)) return IoError(path + ": cached blob is not a regular file");
  if (expected_size_or_0 != 0 && static_cast<std::uint64_t>(st.st_size) != expected_size_or_0) {
    DiscardIfSame(path, fd.get());
    return NotFound(path + ": cached blob has " + std::to_string(st.st_size) + " bytes, expected " +
                    std::to_string(expected_size_or_0) + "; discarded");
  }
  return path;
}

Result<std::string> BlobCache::Fetch(const manifest::Digest& digest,
                                     const std::vector<std::string>& urls,
                                     std::uint64_t expected_size_or_0,
                                     const FetchOptions& options) const {
  auto hit = Get(digest, expected_size_or_0);
  if (hit.ok() || hit.status().code() != StatusCode::kNotFound) return hit;

  CARTON_RETURN_IF_ERROR(MakeDirs(root_ + "/" + kBlobDir));
  CARTON_RETURN_IF_ERROR(MakeDirs(root_ + "/" + kLockDir));
  const FileLock lock(root_ + "/" + kLockDir + "/sha256-" + manifest::ToHex(digest) + ".lock");
  // Whoever held the lock before us may have fetched it already.
  hit = Get(digest, expected_size_or_0);
  if (hit.ok() || hit.status().code() != StatusCode::kNotFound) return hit;

  std::string path = BlobPath(digest);
  CARTON_RETURN_IF_ERROR(FetchToFile(urls, digest, expected_size_or_0, path, options));
  return path;
}

Status BlobCache::Verify(const manifest::Digest& digest, std::uint64_t expected_size_or_0) const {
  const std::string path = BlobPath(digest);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return IoError(path + ": cannot open cached blob: " + Errno());
  }
  manifest::Sha256 hasher;
  std::vector<std::byte> buffer(kHashBufferSize);
  std::uint64_t size = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": cannot read cached blob: " + Errno());
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

}  // namespace carton::links
