#include "wheels.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "carton/common/unique_fd.h"
#include "carton/links/blob_cache.h"
#include "carton/links/cache_layout.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/reader.h"

namespace carton::python_runner {
namespace {

namespace fs = std::filesystem;

Status Errno(const std::string& what, int err) { return IoError(what + ": " + std::strerror(err)); }

// Removes a directory tree unless released.
class TreeGuard {
 public:
  explicit TreeGuard(std::string path) : path_(std::move(path)) {}
  ~TreeGuard() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  TreeGuard(const TreeGuard&) = delete;
  TreeGuard& operator=(const TreeGuard&) = delete;
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

// Where an entry of a wheel goes, relative to the unpacked directory:
// installers move `<name>.data/purelib/` and `<name>.data/platlib/` to the
// top (the wheel format, "Installing a wheel"); everything else stays.
std::string InstallPath(const std::string& name) {
  const auto first = name.find('/');
  if (first == std::string::npos) return name;
  const std::string top = name.substr(0, first);
  if (top.size() <= 5 || top.compare(top.size() - 5, 5, ".data") != 0) return name;
  for (const char* scheme : {"purelib/", "platlib/"}) {
    const std::string prefix = top + "/" + scheme;
    if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size()) {
      return name.substr(prefix.size());
    }
  }
  return name;
}

Status WriteEntry(const ZipReader& zip, const ZipEntry& entry, const fs::path& dest,
                  const std::string& wheel) {
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec) return IoError(dest.parent_path().string() + ": " + ec.message());
  UniqueFd fd(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == EEXIST) {
      return Corrupt("wheel " + wheel + ": entry \"" + entry.name + "\" writes " + dest.string() +
                     " a second time");
    }
    return Errno(dest.string(), errno);
  }
  Status s = zip.ReadTo(entry.name, [&](ByteView chunk) -> Status {
    while (!chunk.empty()) {
      const ssize_t n = ::write(fd.get(), chunk.data(), chunk.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno(dest.string(), errno);
      }
      chunk = chunk.subspan(static_cast<std::size_t>(n));
    }
    return Status::Ok();
  });
  if (!s.ok()) return s.code() == StatusCode::kIoError ? s : s.WithContext("wheel " + wheel);
  if (::close(fd.Release()) != 0) return Errno(dest.string(), errno);
  return Status::Ok();
}

// Unpacks `wheel_path` into `target`, atomically (see wheels.h).
Status Unpack(const std::string& wheel_path, const std::string& wheel, const fs::path& target) {
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return IoError(parent.string() + ": " + ec.message());
  std::string pattern = (parent / (".unpack-" + target.filename().string() + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return Errno(pattern, errno);
  const fs::path tmp = pattern;
  TreeGuard guard(tmp.string());

  auto zip = ZipReader::Open(wheel_path);
  if (!zip.ok()) return zip.status().WithContext("wheel " + wheel);
  for (const ZipEntry& entry : zip->entries()) {
    if (entry.is_symlink) {
      return Corrupt("wheel " + wheel + ": entry \"" + entry.name +
                     "\" is a symbolic link, which wheels may not hold");
    }
    const fs::path dest = tmp / InstallPath(entry.name);
    if (entry.is_dir) {
      fs::create_directories(dest, ec);
      if (ec) return IoError(dest.string() + ": " + ec.message());
      continue;
    }
    CARTON_RETURN_IF_ERROR(WriteEntry(*zip, entry, dest, wheel));
  }
  ::chmod(tmp.c_str(), 0755);  // mkdtemp made it 0700
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    if (errno == EEXIST || errno == ENOTEMPTY) return Status::Ok();  // another load won
    return Errno("renaming " + tmp.string() + " to " + target.string(), errno);
  }
  guard.Release();
  return Status::Ok();
}

// The wheel's bytes on this machine: the bundled file, checked, or the
// blob fetched into the cache.
Result<std::string> WheelFile(const LockedDep& dep, const WheelOptions& options) {
  const std::string hex = manifest::ToHex(dep.sha256);
  if (dep.bundled_whl_path) {
    const std::string path = options.model_dir + "/" + *dep.bundled_whl_path;
    auto digest = manifest::HashFile(path);
    if (!digest.ok()) {
      return Status(digest.status().code(),
                    "bundled wheel " + *dep.bundled_whl_path + ": " + digest.status().message());
    }
    if (*digest != dep.sha256) {
      return Corrupt("bundled wheel " + *dep.bundled_whl_path + ": sha256 is " +
                     manifest::ToHex(*digest) + ", carton.lock says " + hex);
    }
    return path;
  }
  links::BlobCache cache(options.cache_root);
  net::FetchOptions fetch = options.fetch;
  if (fetch.progress_label.empty()) fetch.progress_label = dep.file_name;
  auto path = cache.Fetch(dep.sha256, {*dep.url}, 0, fetch);
  if (!path.ok()) {
    return Status(path.status().code(),
                  "wheel " + dep.file_name + " (" + *dep.url + "): " + path.status().message());
  }
  return path;
}

}  // namespace

std::string PackagesDir(const std::string& cache_root) {
  return links::CacheLayout(cache_root).PythonPackagesDir();
}

Result<std::vector<std::string>> InstallWheels(const std::vector<LockedDep>& deps,
                                               const WheelOptions& options) {
  std::vector<std::string> dirs;
  for (const LockedDep& dep : deps) {
    const fs::path target = fs::path(PackagesDir(options.cache_root)) / manifest::ToHex(dep.sha256);
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      dirs.push_back(target.string());
      continue;
    }
    CARTON_ASSIGN_OR_RETURN(std::string wheel_path, WheelFile(dep, options));
    CARTON_RETURN_IF_ERROR(Unpack(wheel_path, dep.file_name, target));
    dirs.push_back(target.string());
  }
  return dirs;
}

}  // namespace carton::python_runner
