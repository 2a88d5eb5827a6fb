// Private: makes the wheels of a carton.lock entry importable.
//
// Each wheel, named by its sha256, is unpacked once per machine into
// <cache>/python/packages/<sha256>/ (FORMAT.md "Package cache"). A wheel
// from a URL is fetched through the blob cache (links::BlobCache: every
// content encoding, the sha256 checked before the file is visible, retries
// and fallbacks); a bundled wheel is hashed where it lies in model/. The
// unpacking goes to a fresh directory beside the destination, renamed into
// place when complete; when another process got there first, its copy is
// kept and ours removed. Entry names are checked by carton's ZipReader
// (no absolute paths, no "..", no duplicates) and files are created
// exclusively, never through a symlink.
#pragma once

#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/net/fetch.h"
#include "carton/python_runner/lockfile.h"

namespace carton::python_runner {

struct WheelOptions {
  std::string cache_root;  // links::DefaultCacheDir()
  std::string model_dir;   // bundled wheels are relative to it
  net::FetchOptions fetch;
};

// The directory of each wheel of `deps`, in order, fetching and unpacking
// those not unpacked yet. A wheel already unpacked costs one stat and no
// network access. Errors (each naming the wheel's file name and, for a
// URL, the URL): those of BlobCache::Fetch (kNetworkError, kCorrupt for a
// wrong sha256, ...), kNotFound for a missing bundled wheel, kCorrupt for a
// bundled wheel whose sha256 differs or a wheel that is not a valid zip (or
// writes one file twice), kIoError.
Result<std::vector<std::string>> InstallWheels(const std::vector<LockedDep>& deps,
                                               const WheelOptions& options);

// <cache_root>/python/packages
std::string PackagesDir(const std::string& cache_root);

}  // namespace carton::python_runner
