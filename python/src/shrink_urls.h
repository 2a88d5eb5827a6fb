// Private: `carton.shrink(path, urls)` and `carton.pack(linked_files=...)`,
// the original implementation's shrink: the files whose sha256 is a key of
// `urls` leave the zip, and LINKS lists the given URLs for them.
//
// carton::Shrink (links.h) moves files by size to `<prefix>/<sha256>` and
// writes the blobs out; taking explicit URLs per sha256 is not among its
// options, so this composes the same steps from the library's public
// parts: ZipReader, ZipWriter, Manifest, ReadLinks/LinkedFiles,
// links::ParseLinks/WriteLinks. Every kept file is checked against
// MANIFEST as it is copied; MANIFEST is copied byte for byte (the manifest
// hash does not change); carton.toml and tensor_data/index.toml always
// stay, as carton::Shrink keeps them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::python {

struct ShrinkToUrlsReport {
  std::vector<std::string> moved;  // paths that left the zip
  manifest::Digest manifest_hash{};
};

// Writes `out_path` (atomically): the carton at `in` (a path or a URL)
// without the files named by `urls`, with LINKS listing their URLs (merged
// with the LINKS the input had). Errors: kInvalidArgument (a sha256 that
// names no file of the carton, or URLs LINKS cannot hold), kCorrupt (bad
// input, a file whose bytes do not match MANIFEST, naming it),
// kUnsupported, kIoError, and download errors for a URL.
Result<ShrinkToUrlsReport> ShrinkToUrls(
    const std::string& in, const std::string& out_path,
    const std::map<manifest::Digest, std::vector<std::string>>& urls);

}  // namespace carton::python
