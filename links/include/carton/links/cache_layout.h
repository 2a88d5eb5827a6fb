// CacheLayout: where everything lives under the cache root, in one place
// (loader/FORMAT.md "Cache"). Every module that reads or writes the cache
// (the blob cache, the loader, cartons downloaded by URL, OCI mount
// records, the Python runner's packages) names its paths through it.
//
//   <root>/blobs/sha256/<hex>           a blob whose sha256 is its name
//   <root>/blobs/sha256/<hex>.partial   an interrupted download (blob_cache.h)
//   <root>/blobs/sha256/.<hex>.*        a fetch's temporaries
//   <root>/locks/sha256-<hex>.lock      a blob's download lock
//   <root>/locks/blobs.use              blobs in use: one byte per blob (the
//                                       first 62 bits of its sha256 as the
//                                       offset) locked shared by each pull
//                                       that uses the blob, exclusively by
//                                       a removal (blob_cache.h BlobsInUse);
//                                       gc removes it while none is held
//   <root>/cartons/<hex>/               a loaded carton's entry (loader)
//   <root>/cartons/.tmp-<hex>-*/        an entry being made
//   <root>/cartons/.trash-<hex>-<pid>-*/  an entry being removed by <pid>
//   <root>/locks/carton-<hex>.lock      a carton's materialize and download lock
//   <root>/locks/carton-<hex>.use       held shared while an entry is in use
//   <root>/downloads/<hex>.carton       a carton by URL being downloaded
//   <root>/downloads/<hex>-<n>.carton   a carton being pulled by a load
//   <root>/downloads/pulled-<pid>-<n>.carton  a carton pulled for a command
//   <root>/downloads/.carton-download-<pid>-<n>.carton  a URL's carton
//                                       downloaded whole (reader.h)
//   <root>/downloads/.<name>.*          temporaries of the above
//   <root>/oci/mounts/<hex>             repositories known to hold a blob
//   <root>/python/packages/<sha256>/    wheels unpacked by the Python runner
//
// <hex> is a sha256 (a blob's, or a carton's manifest hash) in lowercase
// hex. Every temporary is owned by the holder of a lock (a hash's .lock) or
// by a process (<pid>); one whose owner is gone is removed by gc
// (loader/FORMAT.md "Cache").
//
// Thread-safety: a value type holding the root; pure functions.
#pragma once

#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::links {

// Name prefixes in the directories above.
inline constexpr std::string_view kBlobLockPrefix = "sha256-";    // in locks/
inline constexpr std::string_view kCartonLockPrefix = "carton-";  // in locks/
inline constexpr std::string_view kEntryTempPrefix = ".tmp-";     // in cartons/
inline constexpr std::string_view kEntryTrashPrefix = ".trash-";  // in cartons/
inline constexpr std::string_view kPulledCopyPrefix = "pulled-";  // in downloads/

class CacheLayout {
 public:
  explicit CacheLayout(std::string root) : root_(std::move(root)) {}
  // `root`, or DefaultCacheDir() when it is empty. Errors: those of
  // DefaultCacheDir.
  static Result<CacheLayout> Open(const std::string& root);

  const std::string& root() const { return root_; }

  std::string BlobsDir() const;
  std::string BlobPath(std::string_view hex) const;
  std::string LocksDir() const;
  std::string BlobLockPath(std::string_view hex) const;
  std::string BlobUseLockPath() const;
  std::string CartonsDir() const;
  std::string CartonEntryDir(std::string_view hex) const;
  std::string CartonLockPath(std::string_view hex) const;
  std::string CartonUseLockPath(std::string_view hex) const;
  std::string DownloadsDir() const;
  std::string CartonDownloadPath(std::string_view hex) const;
  std::string OciMountsDir() const;
  std::string OciMountPath(std::string_view hex) const;
  std::string PythonPackagesDir() const;

 private:
  std::string root_;
};

}  // namespace carton::links
