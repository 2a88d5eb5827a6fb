// The manifest-hash cache: <root>/cartons/<manifest hash>/ holds one
// carton's files, materialized once per machine (loader/FORMAT.md "Cache").
//
// Entries appear only by renaming a complete, verified temporary directory
// into place, under a per-hash file lock, so concurrent loaders materialize
// a carton once and a killed process leaves only temporaries that no load
// uses (Temporaries lists them; the next load of the carton and Gc remove
// them). A LoadedCarton holds a shared "use" lock on its entry; Remove and
// Gc skip entries in use, and remove the lock files of the entries they
// remove. Gc also evicts blobs of the LINKS blob cache that shares the
// root (links::BlobCache), skipping those a pull holds in use.
//
// Thread-safety: a CartonCache holds only its root path; methods may run
// concurrently from threads and processes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::loader {

struct CacheEntryInfo {
  std::string hash;  // 64 hex digits
  std::string dir;
  // Bytes the entry takes on disk: the blocks of its files, each file once
  // (the hard-linked source .carton included), as `du -s -B1` counts them.
  std::uint64_t size = 0;
  std::int64_t last_used = 0;  // seconds since the epoch
  std::string model_name;      // from carton.toml, "" when absent
};

struct CacheVerifyResult {
  std::string hash;
  std::vector<std::string> problems;  // empty when the entry is good
  bool ok() const { return problems.empty(); }
};

// The LINKS blob cache under the same root (<root>/blobs/sha256/).
struct BlobUsage {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  // Of `bytes`, those of blobs that are also files of cache entries (hard
  // links): they take no space beyond the entries'.
  std::uint64_t shared_bytes = 0;
};

// A download that was interrupted, kept to be resumed, never used as a
// finished file: a blob of the blob cache (links/blob_cache.h), or a carton
// loaded by URL (downloads/<manifest hash>.carton.partial).
struct PartialDownload {
  std::string kind;    // "blob" or "carton"
  std::string sha256;  // 64 hex digits: the blob's sha256, or the carton's manifest hash
  std::string path;
  std::uint64_t size = 0;  // bytes so far
  std::int64_t last_modified = 0;
  bool in_use = false;  // being downloaded now
};

// A temporary the cache holds (loader/FORMAT.md "Cache"): a file or
// directory a command makes and removes when it ends (an entry being made
// or removed, a carton being downloaded or pulled, a blob's download). One
// whose owner is gone (killed outright) is removed by gc, and one of a
// carton's by the next load of that carton.
struct TemporaryInfo {
  std::string path;
  std::uint64_t size = 0;  // bytes (for a directory, of the files in it)
  std::int64_t last_modified = 0;
  bool in_use = false;  // its owner runs
};

struct GcReport {
  std::vector<std::string> removed;        // manifest hashes of removed entries
  std::vector<std::string> removed_blobs;  // sha256 of removed blobs
  // Removed partial downloads: a blob's sha256, or a carton's manifest hash.
  std::vector<std::string> removed_partials;
  std::uint64_t freed = 0;
  std::uint64_t remaining = 0;  // entries plus blobs not shared with them
  std::vector<std::string> skipped_in_use;
  // sha256 of blobs kept because a fetch or a pull holds them.
  std::vector<std::string> skipped_blobs_in_use;
};

class CartonCache {
 public:
  explicit CartonCache(std::string root);
  // A cache at links::DefaultCacheDir().
  static Result<CartonCache> OpenDefault();

  const std::string& root() const { return root_; }
  std::string EntryDir(const manifest::Digest& hash) const;

  // Every complete entry, most recently used first. Errors: kIoError.
  Result<std::vector<CacheEntryInfo>> List() const;
  // What the blob cache under the same root holds. Errors: kIoError.
  Result<BlobUsage> Blobs() const;
  // Partial downloads in the blob cache. Errors: kIoError.
  Result<std::vector<PartialDownload>> Partials() const;
  // Temporaries, in use or left by processes that are gone; partial
  // downloads aside. Errors: kIoError.
  Result<std::vector<TemporaryInfo>> Temporaries() const;
  // Rehashes the entry's MANIFEST and every file it lists, and checks that
  // nothing else is there. Errors: kNotFound (no such entry), kIoError.
  // `progress`, when set, gets the bytes hashed so far and the total.
  Result<CacheVerifyResult> Verify(const manifest::Digest& hash,
                                   const ProgressFn& progress = {}) const;
  // Removes the entry and its lock files. Errors: kNotFound,
  // kInvalidArgument (in use by a process that has it loaded), kIoError.
  Status Remove(const manifest::Digest& hash) const;
  // Removes least recently used entries not in use, and least recently
  // used blobs, until the entries plus the blobs they do not share are at
  // most `max_size` bytes (loader/FORMAT.md "Removal"); blobs that pulls
  // hold in use are kept. Also removes temporaries whose owners are gone,
  // lock files of hashes with no entry, and partial downloads no process
  // is writing. Errors: kIoError.
  Result<GcReport> Gc(std::uint64_t max_size) const;
  // Removes what nothing uses, whatever the size: what Gc removes besides
  // entries (temporaries whose owners are gone, stale lock files, partial
  // downloads no process writes), and blobs that no cached carton links
  // and no pull holds. Cached cartons stay. Errors: kIoError.
  Result<GcReport> Clean() const;

 private:
  std::string root_;
};

// Parses a size such as "0", "1500", "10K", "512M", "2G", "1T" (powers of
// 1024; an optional trailing "B" or "iB"). Errors: kInvalidArgument.
Result<std::uint64_t> ParseSize(std::string_view text);

}  // namespace carton::loader
