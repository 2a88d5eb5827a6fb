// Private: writing a carton's files into a (temporary) cache directory,
// checking each against MANIFEST on the way.
#pragma once

#include <string>

#include "carton/carton/zip.h"
#include "carton/common/status.h"
#include "carton/loader/loader.h"
#include "carton/manifest/manifest.h"
#include "entry.h"

namespace carton::loader::internal {

// Top-level names a carton may not use because the entry keeps its record
// there.
bool IsReservedEntryPath(std::string_view path);

struct MaterializeSource {
  const ZipReader* zip = nullptr;
  std::string carton_path;  // for messages
  int carton_fd = -1;       // the same file, for in-kernel copies
  const manifest::Manifest* manifest = nullptr;
  std::string manifest_text;
  std::string cache_root;  // linked files go through <root>'s blob cache
  unsigned threads = 0;
  bool allow_file_links = false;
};

// Writes every file of MANIFEST (and MANIFEST itself) under `dir`, which
// exists and is empty. Stored entries are copied with copy_file_range(2)
// (blocks are shared where the filesystem can) while another thread hashes
// them from the mapping; compressed entries are decoded, hashed and written
// in one pass; linked entries are fetched into the blob cache and
// hard-linked (copied across filesystems). Errors name the carton and file:
// kCorrupt (a sha256 mismatch, an entry not in MANIFEST, LINKS that breaks
// the rules of carton/links.h LinkedFiles), kUnsupported, kNetworkError,
// kIoError.
Result<EntryRecord> Materialize(const MaterializeSource& src, const std::string& dir,
                                LoadStats* stats);

}  // namespace carton::loader::internal
