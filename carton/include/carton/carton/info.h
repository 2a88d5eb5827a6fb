// Reading a .carton's metadata without unpacking it: only the central
// directory, carton.toml, MANIFEST and tensor_data/index.toml are read.
// Input is untrusted; nothing is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/limits.h"
#include "carton/carton/location.h"
#include "carton/carton/reader.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/manifest/sha256.h"

namespace carton {

struct CartonFileInfo {
  std::string path;
  std::uint64_t size = 0;
  std::uint64_t compressed_size = 0;
  std::string method;   // "stored", "deflate", "zstd"; "linked" when not in the zip
  bool linked = false;  // listed in MANIFEST, fetched through LINKS
};

struct CartonInfo {
  CartonConfig config;
  manifest::Digest manifest_hash{};
  std::vector<CartonFileInfo> files;  // MANIFEST order; MANIFEST and LINKS excluded
  std::optional<TensorDataIndex> tensor_index;
  bool has_links = false;
};

// `carton_path` may be an http(s) URL: then only the tail of the zip, its
// central directory and these entries are fetched, with HTTP range requests
// (a few kilobytes for most cartons, whatever their size).
// The archive's entries are checked against MANIFEST and LINKS as Verify
// checks them, without reading file data but symlink targets: symlink
// entries that do not resolve (symlink.h), encrypted or unknown-method
// entries, files MANIFEST does not list, listed files that
// are neither in the zip nor covered by LINKS, and a LINKS that does not
// parse are errors. `limits` bounds the archive (zip bombs) and each
// metadata file.
// Errors: kNotFound, kIoError, kCorrupt (bad zip, MANIFEST, carton.toml,
// index.toml or LINKS, naming the entry), kUnsupported (also: a server that
// ignores Range), kNetworkError.
Result<CartonInfo> ReadInfo(const Location& carton, const LinkOptions& options = {},
                            const CartonLimits& limits = {});

// The manifest hash: the SHA-256 of MANIFEST, which is checked to be
// well-formed. Reads only the central directory and MANIFEST (by range
// requests for a URL). Errors: as ReadInfo.
Result<manifest::Digest> ManifestHash(const Location& carton, const LinkOptions& options = {});

// Extracts every file of the carton into `dir`, which must not exist or be
// empty; an empty `dir` means ./<model_name> (carton.toml's, when it is a
// plain file name), else ./<the carton's file name without extension>.
// Returns the directory written. `dir`, when given, and its parent are
// checked before anything is read or downloaded.
//
// Files are written under a temporary directory beside `dir`, each checked
// against MANIFEST as it is extracted, and the directory is renamed into
// place only when all are good: on any error `dir` is untouched and nothing
// is left behind. Entry names were validated on open, so nothing is ever
// written outside `dir`. Linked files (MANIFEST files missing from the zip)
// are fetched through the blob cache from the URLs in LINKS and checked
// like the others. `carton_path` may be an http(s) URL (downloaded into the
// cache first, CartonReader::OpenLocal). Before writing anything, the
// entries are checked as ReadInfo checks them, and their declared sizes
// against the free space where `dir` will be. The temporary directory is
// registered (common/temporaries.h), so a CLI interrupted by SIGINT or
// SIGTERM removes it; a process killed outright leaves it
// (".<name>.unpack-<random>") behind, never a partial `dir`; nothing
// removes it later, and it may be deleted.
//
// Errors: kCorrupt (a hash mismatch or bad entry, a linked file LINKS does
// not cover, naming it), kUnsupported (an unknown compression method),
// kInvalidArgument (dir not empty, no name to choose a default dir from,
// file links not allowed), kNotFound (dir's parent missing), kNetworkError
// (a linked file could not be fetched), kIoError (dir's parent not a
// directory, too little free space, a write that fails).
struct UnpackOptions {
  // Limits on the archive (zip bombs) and the metadata files.
  CartonLimits limits;
  // Refuse, before writing anything, when the file system that will hold
  // `dir` has fewer free bytes than the zip's entries declare.
  bool check_free_space = true;
  // If set, called with the bytes written so far and the total (the zip's
  // files, then each linked file's size as it is copied).
  ProgressFn progress;
};
Result<std::string> Unpack(const Location& carton, const std::string& dir,
                           const LinkOptions& options = {}, const UnpackOptions& unpack = {});

}  // namespace carton
