// Private: writing a carton's files into a (temporary) cache directory,
// checking each against MANIFEST on the way.
//
// Materialize runs in three steps: the plan (one task per file of
// MANIFEST: hash a stored entry in place and map it from the source, or
// also copy it; decode a compressed one; link a LINKS blob), running the
// tasks on all cores, and the links (symlink entries as relative symlinks,
// or as views of their target), after which the record is finished and
// MANIFEST written.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "carton/carton/environment.h"
#include "carton/carton/reader.h"
#include "carton/common/mapped_file.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/loader/loader.h"
#include "entry.h"

namespace carton::loader::internal {

// Top-level names a carton may not use because the entry keeps its record
// there.
bool IsReservedEntryPath(std::string_view path);

// What a cache entry is made from.
struct MaterializeSource {
  // The whole archive, its rules checked (CartonReader::Check): MANIFEST,
  // the entries and the linked files.
  const CartonReader* reader = nullptr;
  // The file it was opened from, whose descriptor the entry hard-links
  // (kSourceName) and stored files are copied from.
  const MappedFile* file = nullptr;
  // The load's policy: its threads, and the network rules linked files
  // are fetched by (into the blob cache of `cache_root`, its resolved cache
  // root).
  const Environment* environment = nullptr;
  std::string cache_root;
  // Called with the bytes hashed, copied, decoded or fetched so far and the
  // total of the files' sizes (linked files count once fetched).
  ProgressFn progress;
};

enum class TaskKind { kHashStored, kCopyStored, kDecode, kLink };

struct MaterializeTask {
  TaskKind kind;
  std::size_t file;  // index into MANIFEST entries (and the record's files)
  std::uint64_t size;
};

struct MaterializePlan {
  EntryRecord record;  // one file per MANIFEST entry; sizes of linked files come later
  std::vector<MaterializeTask> tasks;  // largest first
  // Symlink entries: the file's index and its target's. They get no task:
  // the target is hashed, and MANIFEST gives both the same sha256.
  std::vector<std::pair<std::size_t, std::size_t>> symlinks;
  bool any_mapped = false;  // some file is served from the source
};

// Plans the entry for `src` in `dir`; `source_linked` says whether the
// source file is hard-linked into it (files are mapped from it only then).
// Errors name the carton: kUnsupported (a name the cache reserves),
// kCorrupt.
Result<MaterializePlan> PlanMaterialize(const MaterializeSource& src, bool source_linked);

// Runs the plan's tasks on src.threads threads, writing under `dir`. Every
// file is checked against MANIFEST. Errors name the carton and the file.
Status RunMaterialize(const MaterializeSource& src, const MaterializePlan& plan,
                      const std::string& dir, LoadStats* stats);

// Creates the symlink entries (relative symlinks; a view of the target
// when the target is mapped) and completes the record's sizes.
Status LinkSymlinks(const MaterializeSource& src, MaterializePlan* plan, const std::string& dir);

// Writes every file of MANIFEST (and MANIFEST itself) under `dir`, which
// exists and is empty: PlanMaterialize, RunMaterialize, LinkSymlinks.
// Stored entries are copied with copy_file_range(2) (blocks are shared
// where the filesystem can) while another thread hashes them from the
// mapping, or, when large enough and the source is hard-linked, only
// hashed and later mapped from the source; compressed entries are decoded,
// hashed and written in one pass (CartonReader::ExtractTo); linked entries
// are fetched into the blob cache and hard-linked (copied across
// filesystems). Errors name the carton and file: kCorrupt (a sha256
// mismatch), kUnsupported, kNetworkError, kIoError.
Result<EntryRecord> Materialize(const MaterializeSource& src, const std::string& dir,
                                LoadStats* stats);

}  // namespace carton::loader::internal
