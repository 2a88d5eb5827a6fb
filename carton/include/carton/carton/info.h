// Reading a .carton's metadata without unpacking it: only the central
// directory, carton.toml, MANIFEST and tensor_data/index.toml are read.
// Input is untrusted; nothing is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/config.h"
#include "carton/carton/links.h"
#include "carton/carton/tensor_data.h"
#include "carton/common/status.h"
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
// Errors: kNotFound, kIoError, kCorrupt (bad zip, MANIFEST, carton.toml or
// index.toml, naming the entry), kUnsupported (also: a server that ignores
// Range), kNetworkError.
Result<CartonInfo> ReadInfo(const std::string& carton_path, const LinkOptions& options = {});

// The manifest hash: the SHA-256 of MANIFEST, which is checked to be
// well-formed. Reads only the central directory and MANIFEST (by range
// requests for a URL). Errors: as ReadInfo.
Result<manifest::Digest> ManifestHash(const std::string& carton_path,
                                      const LinkOptions& options = {});

// Extracts every file of the carton into `dir`, which must not exist or be
// empty. Files are written under a temporary directory beside `dir`, each
// checked against MANIFEST as it is extracted, and the directory is renamed
// into place only when all are good: on any error `dir` is untouched and
// nothing is left behind. Entry names were validated on open, so nothing
// is ever written outside `dir`. Linked files (MANIFEST files missing from
// the zip) are fetched through the blob cache from the URLs in LINKS and
// checked like the others. `carton_path` may be an http(s) URL (downloaded
// to a temporary file beside `dir` first).
// Errors: kCorrupt (a hash mismatch or bad entry, a linked file LINKS does
// not cover, naming it), kInvalidArgument (dir not empty, file links not
// allowed), kNetworkError (a linked file could not be fetched), kIoError.
Status Unpack(const std::string& carton_path, const std::string& dir,
              const LinkOptions& options = {});

}  // namespace carton
