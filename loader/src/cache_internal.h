// Private: finding, materializing and checking cache entries.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "carton/carton/source.h"
#include "carton/common/file_lock.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/links/cache_layout.h"
#include "carton/loader/loader.h"
#include "carton/manifest/sha256.h"
#include "entry.h"
#include "materialize.h"

namespace carton::loader::internal {

// The cache's paths are links::CacheLayout's (carton/links/cache_layout.h).

// A cache entry ready to use, with its use lock held shared.
struct AcquiredEntry {
  std::string dir;
  EntryRecord record;
  FileLock use_lock;
  bool hit = false;
};

// The one way a load gets its cache entry (loader/FORMAT.md "Cache"): the
// entry named by `hash` (the source's manifest hash) if it is whole (a
// hit), else, under the entry's materialize lock and after looking again
// (another process may have made it meanwhile), a new entry materialized
// from the source read whole (for a URL, downloaded under that lock; its
// MANIFEST must hash to `hash`). A damaged entry (missing or resized file;
// any wrong hash with verify_cache_hit) is discarded and rebuilt. The use
// lock is held shared from the first look on.
Result<AcquiredEntry> AcquireEntry(const std::string& root, CartonSource& source,
                                   const manifest::Digest& hash, const LoadOptions& options,
                                   LoadStats* stats);

// A temporary of the cache (links/cache_layout.h): a file or directory a
// command makes and removes when it ends, and who owns it meanwhile.
struct CacheTemporary {
  std::filesystem::path path;
  bool directory = false;
  std::string hex;  // the manifest hash whose .lock its owner holds, or ""
  pid_t pid = 0;    // else the process that owns it (0: none named)
  // "<hash>.carton.partial" and its validator: a URL's download kept for
  // the next one to resume.
  bool resumable = false;
};

// The temporaries in cartons/ and downloads/. Best effort.
std::vector<CacheTemporary> ListCacheTemporaries(const links::CacheLayout& layout);

// Whether the owner of `t` is gone. For a hash's lock, `lock` then holds
// it exclusively: no load of the hash starts before the caller releases it.
bool OwnerGone(const links::CacheLayout& layout, const CacheTemporary& t, FileLock* lock);

// Every problem of the entry in `dir` (named by `hash`): MANIFEST's hash,
// every file's sha256, extra files. Errors: kIoError only.
Result<std::vector<std::string>> VerifyEntryDir(const std::string& dir,
                                                const manifest::Digest& hash, unsigned threads,
                                                const ProgressFn& progress = {});

}  // namespace carton::loader::internal
