// Private: pre-compressed copies of blobs for `carton shrink --encodings`,
// which a web server can send with a matching Content-Encoding.
#pragma once

#include <string>

#include "carton/carton/links.h"
#include "carton/common/status.h"

namespace carton::internal {

// zstd level 19 and brotli quality 11 take minutes per GiB here; these
// levels keep shrinking a large model in the range of its hashing time
// while still saving most of what the slow levels would.
inline constexpr int kBlobZstdLevel = 9;
inline constexpr int kBlobBrotliQuality = 7;
inline constexpr int kBlobGzipLevel = 9;

// Writes `src` compressed with `encoding` to `dest` atomically (a zstd
// frame, a brotli stream, or a gzip member). Errors: kIoError, kInternal.
Status WriteEncodedCopy(const std::string& src, const std::string& dest, BlobEncoding encoding);

}  // namespace carton::internal
