#include "carton/links/cache_layout.h"

#include "carton/links/blob_cache.h"

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
std::string CacheLayout::OciMountsDir() const { return root_ + "/oci/mounts"; }
std::string CacheLayout::OciMountPath(std::string_view hex) const {
  return OciMountsDir() + "/" + std::string(hex);
}
std::string CacheLayout::PythonPackagesDir() const { return root_ + "/python/packages"; }

}  // namespace carton::links
