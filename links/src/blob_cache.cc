#include "carton/links/blob_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
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

// Opens (creating it and its directory) the lock file of the blobs in use.
// A cache the process may only read is opened for reading: shared locks
// still work.
Result<UniqueFd> OpenUseLockFile(const std::string& root) {
  const CacheLayout layout(root);
  CARTON_RETURN_IF_ERROR(MakeDirs(layout.LocksDir()));
  const std::string path = layout.BlobUseLockPath();
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (!fd.valid() && (errno == EACCES || errno == EROFS)) {
    fd.Reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  if (!fd.valid()) return ErrnoIoError(errno, path + ": cannot open the lock file of blobs in use");
  return fd;
}

// Takes (F_RDLCK, F_WRLCK) the blob's byte of the use lock file on the
// open file description `fd` (an OFD lock: held by that description, not
// the process, so two in one process conflict as two processes do). True
// when taken; false when `wait` is false and another holds it. On a file
// system without such locks nothing is held and nothing refuses (true), as
// a BlobLock that cannot be taken: removals then race with pulls, as they
// did before these locks.
Result<bool> LockUseByte(int fd, const manifest::Digest& digest, short type, bool wait) {
  std::uint64_t first = 0;
  for (int i = 0; i < 8; ++i) first = (first << 8) | digest[i];
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(first >> 2);  // below 2^62: any off_t holds it
  lock.l_len = 1;
  for (;;) {
    if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock) == 0) return true;
    if (errno == EINTR) continue;
    if (!wait && (errno == EAGAIN || errno == EACCES)) return false;
    if (errno == ENOLCK || errno == EINVAL || errno == EOPNOTSUPP) return true;
    return ErrnoIoError(errno, manifest::ToHex(digest) + ": cannot lock the blob as in use");
  }
}

std::string UseLockPath(const std::string& root) { return CacheLayout(root).BlobUseLockPath(); }

// Whether `fd` is the file at `path` (false when the path is gone).
Result<bool> IsFileAtPath(int fd, const std::string& path) {
  struct stat held {};
  struct stat at_path {};
  if (::fstat(fd, &held) != 0) return ErrnoIoError(errno, path + ": cannot stat lock file");
  if (::stat(path.c_str(), &at_path) != 0) {
    if (errno == ENOENT) return false;
    return ErrnoIoError(errno, path + ": cannot stat lock file");
  }
  return held.st_dev == at_path.st_dev && held.st_ino == at_path.st_ino;
}

// Removes the lock file of blobs in use while no one holds any blob in it
// (an exclusive lock on the whole file, taken without waiting): a holder
// that opened it before finds it gone once it has locked its byte
// (BlobsInUse::Hold) and moves to a new one.
void RemoveUseLockFileIfFree(const std::string& root) {
  const std::string path = UseLockPath(root);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return;
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;  // l_start 0, l_len 0: every byte
  if (::fcntl(fd.get(), F_OFD_SETLK, &whole) != 0) return;
  auto at_path = IsFileAtPath(fd.get(), path);
  if (at_path.ok() && *at_path) ::unlink(path.c_str());
}

// Takes the blob's byte of the use lock file exclusively without waiting,
// into `fd`, on the file that is at the path (RemoveUseLockFileIfFree may
// remove it meanwhile). False when a BlobsInUse holds the blob.
Result<bool> LockUseExclusive(const std::string& root, const manifest::Digest& digest,
                              UniqueFd* fd) {
  for (;;) {
    CARTON_ASSIGN_OR_RETURN(*fd, OpenUseLockFile(root));
    CARTON_ASSIGN_OR_RETURN(bool free, LockUseByte(fd->get(), digest, F_WRLCK, /*wait=*/false));
    if (!free) return false;
    CARTON_ASSIGN_OR_RETURN(bool at_path, IsFileAtPath(fd->get(), UseLockPath(root)));
    if (at_path) return true;
  }
}

// ".<hex>.<anything>" in blobs/: a temporary of a fetch of <hex> (the
// download's file before its rename, the validator's); else nullopt.
std::optional<manifest::Digest> TemporaryOf(const std::string& name) {
  if (name.size() < 1 + 64 + 1 || name[0] != '.' || name[65] != '.') return std::nullopt;
  return manifest::ParseHex(name.substr(1, 64));
}

// Calls `fn(name, path, st)` for each regular file in `dir` (nothing when
// `dir` does not exist yet). Errors: kIoError when it cannot be listed.
Status ForEachRegularFile(
    const std::string& dir,
    const std::function<void(const std::string&, const std::string&, const struct stat&)>& fn) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return Status::Ok();
    return IoError(dir + ": cannot list: " + ec.message());
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    fn(it->path().filename().string(), it->path().string(), st);
  }
  if (ec) return IoError(dir + ": cannot list: " + ec.message());
  return Status::Ok();
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

Status BlobsInUse::Hold(const manifest::Digest& digest) {
  if (holds(digest)) return Status::Ok();
  if (!fd_.valid()) CARTON_RETURN_IF_ERROR(Reopen());
  CARTON_RETURN_IF_ERROR(LockUseByte(fd_.get(), digest, F_RDLCK, /*wait=*/true).status());
  held_.insert(digest);
  // RemoveStaleLocks may have removed the file before this lock was taken.
  CARTON_ASSIGN_OR_RETURN(bool at_path, IsFileAtPath(fd_.get(), UseLockPath(root_)));
  return at_path ? Status::Ok() : Reopen();
}

Status BlobsInUse::Reopen() {
  for (;;) {
    // Closing the old descriptor releases what it held.
    CARTON_ASSIGN_OR_RETURN(fd_, OpenUseLockFile(root_));
    for (const manifest::Digest& d : held_) {
      CARTON_RETURN_IF_ERROR(LockUseByte(fd_.get(), d, F_RDLCK, /*wait=*/true).status());
    }
    CARTON_ASSIGN_OR_RETURN(bool at_path, IsFileAtPath(fd_.get(), UseLockPath(root_)));
    if (at_path) return Status::Ok();
  }
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
  CARTON_RETURN_IF_ERROR(ForEachRegularFile(
      CacheLayout(root_).BlobsDir(),
      [&](const std::string& name, const std::string& path, const struct stat& st) {
        auto digest = manifest::ParseHex(name);
        if (!digest) return;  // temporary files of fetches in progress
        BlobInfo b;
        b.digest = *digest;
        b.path = path;
        b.size = static_cast<std::uint64_t>(st.st_size);
        b.last_used = st.st_mtim.tv_sec;
        b.links = static_cast<std::uint64_t>(st.st_nlink);
        out.push_back(std::move(b));
      }));
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
  // Held exclusively until the blob is gone: a BlobsInUse::Hold meanwhile
  // waits, and then finds the blob absent.
  UniqueFd use;
  CARTON_ASSIGN_OR_RETURN(bool free, LockUseExclusive(root_, digest, &use));
  if (!free) return InvalidArgument(hex + ": the blob is in use");
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return NotFound(path + ": not in the cache");
    return ErrnoIoError(errno, path + ": cannot remove cached blob");
  }
  if (lock.held()) lock.RemoveFile();
  return Status::Ok();
}

Result<std::vector<PartialBlob>> BlobCache::ListPartials() const {
  std::vector<PartialBlob> out;
  const std::string_view suffix = net::kPartialSuffix;
  CARTON_RETURN_IF_ERROR(ForEachRegularFile(
      CacheLayout(root_).BlobsDir(),
      [&](const std::string& name, const std::string& path, const struct stat& st) {
        if (name.size() != 64 + suffix.size() || !name.ends_with(suffix)) return;
        auto digest = manifest::ParseHex(name.substr(0, 64));
        if (!digest) return;
        out.push_back({*digest, path, static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec,
                       BlobLock(LockPath(root_, name.substr(0, 64)), /*wait=*/false).busy()});
      }));
  return out;
}

Result<std::vector<PartialBlob>> BlobCache::ListTemporaries() const {
  std::vector<PartialBlob> out;
  CARTON_RETURN_IF_ERROR(ForEachRegularFile(
      CacheLayout(root_).BlobsDir(),
      [&](const std::string& name, const std::string& path, const struct stat& st) {
        auto digest = TemporaryOf(name);
        if (!digest) return;
        out.push_back({*digest, path, static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec,
                       BlobLock(LockPath(root_, name.substr(1, 64)), /*wait=*/false).busy()});
      }));
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
  // a crash): those whose blob's lock is free.
  auto temporaries = ListTemporaries();
  if (!temporaries.ok()) return removed;
  for (const PartialBlob& t : *temporaries) {
    BlobLock lock(LockPath(root_, manifest::ToHex(t.digest)), /*wait=*/false);
    if (lock.held()) ::unlink(t.path.c_str());
  }
  return removed;
}

void BlobCache::RemoveStaleLocks() const {
  RemoveUseLockFileIfFree(root_);
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
