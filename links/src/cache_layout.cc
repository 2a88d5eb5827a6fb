#include "carton/links/cache_layout.h"

#include <unistd.h>

#include <atomic>
#include <charconv>

#include "carton/links/blob_cache.h"
#include "carton/manifest/sha256.h"
#include "carton/net/fetch.h"

namespace carton::links {

Result<CacheLayout> CacheLayout::Open(const std::string& root) {
  if (!root.empty()) return CacheLayout(root);
  CARTON_ASSIGN_OR_RETURN(std::string found, DefaultCacheDir());
  return CacheLayout(std::move(found));
}

std::string CacheLayout::BlobsDir() const { return root_ + "/blobs/sha256"; }
std::string CacheLayout::BlobPath(std::string_view hex) const {
  return BlobsDir() + "/" + std::string(hex);
}
std::string CacheLayout::LocksDir() const { return root_ + "/locks"; }
std::string CacheLayout::BlobLockPath(std::string_view hex) const {
  return LocksDir() + "/" + std::string(kBlobLockPrefix) + std::string(hex) + ".lock";
}
std::string CacheLayout::BlobUseLockPath() const { return LocksDir() + "/blobs.use"; }
std::string CacheLayout::CartonsDir() const { return root_ + "/cartons"; }
std::string CacheLayout::CartonEntryDir(std::string_view hex) const {
  return CartonsDir() + "/" + std::string(hex);
}
std::string CacheLayout::CartonLockPath(std::string_view hex) const {
  return LocksDir() + "/" + std::string(kCartonLockPrefix) + std::string(hex) + ".lock";
}
std::string CacheLayout::CartonUseLockPath(std::string_view hex) const {
  return LocksDir() + "/" + std::string(kCartonLockPrefix) + std::string(hex) + ".use";
}
std::string CacheLayout::DownloadsDir() const { return root_ + "/downloads"; }
std::string CacheLayout::CartonDownloadPath(std::string_view hex) const {
  return DownloadsDir() + "/" + std::string(hex) + ".carton";
}
namespace {

std::atomic<unsigned> download_counter{0};

}  // namespace

std::string CacheLayout::ProcessDownloadPath(const std::string& dir, std::string_view prefix) {
  return dir + "/" + std::string(prefix) + std::to_string(::getpid()) + "-" +
         std::to_string(download_counter.fetch_add(1)) + ".carton";
}

std::string CacheLayout::HashDownloadPath(std::string_view hex) const {
  return DownloadsDir() + "/" + std::string(hex) + "-" +
         std::to_string(download_counter.fetch_add(1)) + ".carton";
}

namespace {

// The pid at the start of "<pid>-...", or 0.
int PidIn(std::string_view s) {
  int pid = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), pid);
  return ec == std::errc() && end != s.data() && pid > 0 ? pid : 0;
}

}  // namespace

std::optional<DownloadName> CacheLayout::ParseDownloadName(std::string_view name) {
  const std::size_t dots = name.find_first_not_of('.');
  if (dots == std::string_view::npos) return std::nullopt;
  const std::string_view bare = name.substr(dots);
  DownloadName d;
  for (std::string_view prefix : {kPulledCopyPrefix, kDownloadCopyPrefix.substr(1)}) {
    if (bare.starts_with(prefix)) {
      d.pid = PidIn(bare.substr(prefix.size()));
      return d;
    }
  }
  if (bare.size() < 64 || !manifest::ParseHex(bare.substr(0, 64))) return std::nullopt;
  d.hex = std::string(bare.substr(0, 64));
  const std::string download = d.hex + ".carton";
  d.resumable = name == download + net::kPartialSuffix || name == download + net::kValidatorSuffix;
  return d;
}

std::string CacheLayout::OciMountsDir() const { return root_ + "/oci/mounts"; }
std::string CacheLayout::OciMountPath(std::string_view hex) const {
  return OciMountsDir() + "/" + std::string(hex);
}
std::string CacheLayout::PythonPackagesDir() const { return root_ + "/python/packages"; }

}  // namespace carton::links
