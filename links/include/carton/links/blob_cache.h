// BlobCache: a content-addressed directory of fetched files.
//
// Layout under the cache root (names from cache_layout.h):
//   blobs/sha256/<64 hex>   a file whose sha256 is its name
//   blobs/sha256/<64 hex>.partial   what arrived of an interrupted download,
//                           resumed by the next Fetch (with
//                           <64 hex>.partial-validator: its ETag)
//   locks/sha256-<64 hex>.lock   advisory locks that keep processes from
//                           downloading the same blob twice at once
// Blobs only appear by atomic rename of a fully verified file, so readers
// never see a partial blob, and any number of threads or processes may fetch
// the same blob into one cache at once: all succeed and one file results.
// A blob's mtime is its last use (set by Get), for eviction (List, Remove).
// Lock files are removed only under their exclusive lock, and a locker
// checks after locking that its file is still the one at the path (the
// scheme of loader/FORMAT.md "Lock files").
//
// Thread-safety: a BlobCache holds only its root path; all methods may be
// called concurrently, also from several processes sharing the directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/net/fetch.h"

namespace carton::links {

// The cache root: $CARTON_CACHE_DIR if set and non-empty, else
// $XDG_CACHE_HOME/carton if that is an absolute path, else
// $HOME/.cache/carton. Errors: kNotFound when none of these is usable.
Result<std::string> DefaultCacheDir();

// One blob as List() finds it.
struct BlobInfo {
  manifest::Digest digest;
  std::string path;
  std::uint64_t size = 0;
  std::int64_t last_used = 0;  // seconds since the epoch (the file's mtime)
  // Hard links to the file: more than 1 when other files (such as the
  // loader's cache entries) share it, so removing the blob frees nothing.
  std::uint64_t links = 1;
};

// A partial download (<hex>.partial) as ListPartials() finds it.
struct PartialBlob {
  manifest::Digest digest;
  std::string path;
  std::uint64_t size = 0;
  std::int64_t last_modified = 0;  // seconds since the epoch
  bool in_use = false;             // a fetch holds the blob's lock now
};

class BlobCache {
 public:
  // A cache rooted at `root`; directories are created on first Fetch.
  explicit BlobCache(std::string root);
  // A cache at DefaultCacheDir().
  static Result<BlobCache> OpenDefault();

  const std::string& root() const { return root_; }
  // Where the blob with this sha256 lives (whether or not it is present).
  std::string BlobPath(const manifest::Digest& digest) const;

  // The path of the cached blob, marked as used now. The hash is not
  // recomputed (use Verify); when `expected_size_or_0` is non-zero and the
  // file's size differs, the file is discarded.
  // Errors: kNotFound (absent, or discarded), kIoError.
  Result<std::string> Get(const manifest::Digest& digest,
                          std::uint64_t expected_size_or_0 = 0) const;

  // Get(), or on a miss net::FetchToFile() straight into the cache and then the
  // path. A hit does no network access. Errors: those of net::FetchToFile, and
  // kIoError when the cache directories cannot be created.
  Result<std::string> Fetch(const manifest::Digest& digest, const std::vector<std::string>& urls,
                            std::uint64_t expected_size_or_0,
                            const net::FetchOptions& options = {}) const;

  // Rehashes the cached blob. A blob with the wrong size (when known) or
  // sha256 is discarded. Errors: kNotFound (absent), kCorrupt (wrong, now
  // discarded), kIoError.
  Status Verify(const manifest::Digest& digest, std::uint64_t expected_size_or_0 = 0) const;

  // Every blob in the cache (files named by 64 lowercase hex digits), in
  // no particular order. Errors: kIoError.
  Result<std::vector<BlobInfo>> List() const;

  // Removes the blob and its lock file. A process that got the blob's path
  // before may then fail to open it: callers that use a path later than
  // Fetch returns it should fetch again when it is gone. Errors: kNotFound
  // (absent), kInvalidArgument (being fetched), kIoError.
  Status Remove(const manifest::Digest& digest) const;

  // Partial downloads, never used as blobs. Errors: kIoError.
  Result<std::vector<PartialBlob>> ListPartials() const;

  // Removes partial downloads that no fetch is writing (their lock is
  // free), and temporaries left by killed fetches. Best effort; returns the
  // partial downloads removed.
  std::vector<PartialBlob> RemoveStalePartials() const;

  // Removes the lock files of blobs that are not in the cache (left by
  // fetches that failed), skipping those in use. Best effort.
  void RemoveStaleLocks() const;

 private:
  std::string root_;
};

}  // namespace carton::links
