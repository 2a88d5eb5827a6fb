// Private: finding, materializing and checking cache entries.
#pragma once

#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/loader/loader.h"
#include "entry.h"
#include "file_lock.h"
#include "materialize.h"

namespace carton::loader::internal {

std::string CartonsDir(const std::string& root);
std::string MaterializeLockPath(const std::string& root, const std::string& hex);
std::string UseLockPath(const std::string& root, const std::string& hex);
std::string DownloadsDir(const std::string& root);

// A cache entry ready to use, with its use lock held shared.
struct AcquiredEntry {
  std::string dir;
  EntryRecord record;
  FileLock use_lock;
  bool hit = false;
};

// Finds the entry for `hex` or materializes it from `src` (MANIFEST order
// as `src.manifest`), as loader/FORMAT.md "Cache" describes. A damaged
// entry (missing or resized file; any wrong hash when `verify_hit`) is
// discarded and rebuilt. With `src` null only a hit is possible: a miss
// is kNotFound. `held`, when it is the materialize lock of `hex` and the
// caller holds it exclusively, is used instead of taking that lock again.
Result<AcquiredEntry> AcquireEntry(const std::string& root, const std::string& hex,
                                   const MaterializeSource* src, bool verify_hit, LoadStats* stats,
                                   FileLock* held = nullptr);

// Every problem of the entry in `dir` (named `hex`): MANIFEST's hash,
// every file's sha256, extra files. Errors: kIoError only.
Result<std::vector<std::string>> VerifyEntryDir(const std::string& dir, const std::string& hex,
                                                unsigned threads);

}  // namespace carton::loader::internal
