// Private: the one seam where the loader reads cartons over HTTP(S).
//
// Load(url) needs two things from a remote carton: its MANIFEST (read with
// ranged requests of the central directory and the MANIFEST entry, so a
// cache hit costs a few small requests) and, on a miss, the whole file.
// GetModelInfo(url) needs the metadata entries only. They are implemented
// with carton's OpenCarton (links::HttpRangeSource) and
// links::DownloadToFile (loader/FORMAT.md "URLs").
#pragma once

#include <string>

#include "carton/carton/info.h"
#include "carton/common/status.h"

namespace carton::loader::internal {

// The bytes of the carton's MANIFEST entry.
Result<std::string> ReadRemoteManifest(const std::string& url);

// Downloads the whole carton to `dest_path` (atomically).
Status DownloadCarton(const std::string& url, const std::string& dest_path);

// carton.toml, MANIFEST and tensor_data/index.toml, as ReadInfo does.
Result<CartonInfo> ReadRemoteInfo(const std::string& url);

}  // namespace carton::loader::internal
