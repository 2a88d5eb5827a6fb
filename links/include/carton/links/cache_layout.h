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
//                                       downloaded whole to a temporary name
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

#include <optional>
#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::links {

// Name prefixes in the directories above.
inline constexpr std::string_view kBlobLockPrefix = "sha256-";                // in locks/
inline constexpr std::string_view kCartonLockPrefix = "carton-";              // in locks/
inline constexpr std::string_view kEntryTempPrefix = ".tmp-";                 // in cartons/
inline constexpr std::string_view kEntryTrashPrefix = ".trash-";              // in cartons/
inline constexpr std::string_view kPulledCopyPrefix = "pulled-";              // in downloads/
inline constexpr std::string_view kDownloadCopyPrefix = ".carton-download-";  // in downloads/

// What a name in downloads/ is (ParseDownloadName), and who owns it.
struct DownloadName {
  // A carton by URL being downloaded under its manifest hash, owned by the
  // holder of CartonLockPath(hex); "" for a name owned by a process.
  std::string hex;
  // The process that owns a pulled or temporary copy; 0 when `hex` is set.
  int pid = 0;
  // The resumable part of <hex>.carton (its .partial or .partial-validator):
  // kept for the next download, never a dead temporary.
  bool resumable = false;
};

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
  // "<dir>/<prefix><pid>-<n>.carton" (kPulledCopyPrefix or
  // kDownloadCopyPrefix): a name owned by this process, never given twice
  // in it, which gc removes once the process is gone.
  static std::string ProcessDownloadPath(const std::string& dir, std::string_view prefix);
  std::string ProcessDownloadPath(std::string_view prefix) const {
    return ProcessDownloadPath(DownloadsDir(), prefix);
  }
  // "<downloads>/<hex>-<n>.carton": a copy owned by the holder of
  // CartonLockPath(hex) (a load's pull), never given twice in this process.
  std::string HashDownloadPath(std::string_view hex) const;
  // The owner of a file named `name` in downloads/ (one of the names above,
  // or a temporary of one: the same name behind one or more dots); nullopt
  // for a name carton never makes there.
  static std::optional<DownloadName> ParseDownloadName(std::string_view name);
  std::string OciMountsDir() const;
  std::string OciMountPath(std::string_view hex) const;
  std::string PythonPackagesDir() const;

 private:
  std::string root_;
};

}  // namespace carton::links
