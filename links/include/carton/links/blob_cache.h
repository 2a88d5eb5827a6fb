// BlobCache: a content-addressed directory of fetched files.
//
// Layout under the cache root (names from cache_layout.h):
//   blobs/sha256/<64 hex>   a file whose sha256 is its name
//   blobs/sha256/<64 hex>.partial   what arrived of an interrupted download,
//                           resumed by the next Fetch (with
//                           <64 hex>.partial-validator: its ETag)
//   blobs/sha256/.<64 hex>.*   a fetch's temporaries
//   locks/sha256-<64 hex>.lock   advisory locks that keep processes from
//                           downloading the same blob twice at once
//   locks/blobs.use         the blobs in use (BlobsInUse), which Remove
//                           leaves alone
// Blobs only appear by atomic rename of a fully verified file, so readers
// never see a partial blob, and any number of threads or processes may fetch
// the same blob into one cache at once: all succeed and one file results.
// A blob's mtime is its last use (set by Get), for eviction (List, Remove).
// A blob held by a BlobsInUse (a pull, until its carton is written) is not
// removed.
// Lock files are removed only under their exclusive lock, and a locker
// checks after locking that its file is still the one at the path (the
// scheme of loader/FORMAT.md "Lock files").
//
// Thread-safety: a BlobCache holds only its root path; all methods may be
// called concurrently, also from several processes sharing the directory.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/common/unique_fd.h"
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

// A partial download (<hex>.partial) as ListPartials() finds it, or a
// fetch's temporary as ListTemporaries() does.
struct PartialBlob {
  manifest::Digest digest;
  std::string path;
  std::uint64_t size = 0;
  std::int64_t last_modified = 0;  // seconds since the epoch
  bool in_use = false;             // a fetch holds the blob's lock now
};

// The blobs one operation uses, held from before it looks each one up
// until it is done with their files (a pull: until its carton is
// written): while a blob is held, BlobCache::Remove (and so gc) refuses
// to remove it. Each blob is a shared lock on one byte of
// <root>/locks/blobs.use (at the first 62 bits of its sha256: two blobs
// that share them only keep each other), all in one open file, so a pull
// of thousands of blobs takes one descriptor. Released on destruction.
// Move-only; not thread-safe (one per operation).
class BlobsInUse {
 public:
  BlobsInUse() = default;
  BlobsInUse(BlobsInUse&&) noexcept = default;
  BlobsInUse& operator=(BlobsInUse&&) noexcept = default;
  BlobsInUse(const BlobsInUse&) = delete;
  BlobsInUse& operator=(const BlobsInUse&) = delete;

  // Holds the blob, cached or not, waiting while a Remove of it runs.
  // Errors: kIoError (the lock file cannot be made, opened or locked).
  Status Hold(const manifest::Digest& digest);
  bool holds(const manifest::Digest& digest) const { return held_.count(digest) != 0; }

 private:
  friend class BlobCache;
  explicit BlobsInUse(std::string root) : root_(std::move(root)) {}
  // Opens the lock file at its path and takes every held blob in it,
  // again until the file locked is the one at the path.
  Status Reopen();

  std::string root_;
  UniqueFd fd_;  // the lock file, opened by the first Hold
  std::set<manifest::Digest> held_;
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

  // An empty set of blobs in use in this cache (BlobsInUse::Hold adds).
  BlobsInUse Uses() const { return BlobsInUse(root_); }

  // Removes the blob and its lock file, unless a fetch or a BlobsInUse
  // holds it. A process that got the blob's path before without holding it
  // may then fail to open it: such callers should fetch again when it is
  // gone. Errors: kNotFound (absent), kInvalidArgument (being fetched, or
  // in use: the message says which), kIoError.
  Status Remove(const manifest::Digest& digest) const;

  // Partial downloads, never used as blobs. Errors: kIoError.
  Result<std::vector<PartialBlob>> ListPartials() const;

  // The temporaries of fetches (".<hex>.*": a download's file before its
  // rename, its validator's), each with whether a fetch of its blob holds
  // the lock now; those of fetches that were killed outright stay until
  // RemoveStalePartials. Errors: kIoError.
  Result<std::vector<PartialBlob>> ListTemporaries() const;

  // Removes partial downloads that no fetch is writing (their lock is
  // free), and the temporaries of fetches that no longer run. Best effort;
  // returns the partial downloads removed.
  std::vector<PartialBlob> RemoveStalePartials() const;

  // Removes the lock files of blobs that are not in the cache (left by
  // fetches that failed), skipping those in use. Best effort.
  void RemoveStaleLocks() const;

 private:
  std::string root_;
};

}  // namespace carton::links
