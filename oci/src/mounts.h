// Which repositories of a registry are known to hold a blob, so a push can
// mount it from one of them instead of uploading it again. Private to
// oci/src (client.cc).
//
// Kept under the cache root as oci/mounts/<sha256 hex>: one line
// "<registry> <repository>" per place the blob was pushed to or pulled
// from, appended with O_APPEND (safe from many processes). Best effort:
// an unreadable or unwritable record only costs an upload.
#pragma once

#include <string>
#include <vector>

#include "carton/manifest/sha256.h"

namespace carton::oci {

// Repositories of `registry` other than `except` known to hold `digest`,
// most recently recorded first. Empty when `cache_root` is empty.
std::vector<std::string> KnownRepositories(const std::string& cache_root,
                                           const std::string& registry, const std::string& except,
                                           const manifest::Digest& digest);

// Records that `repository` of `registry` holds `digest` (once).
void RememberRepository(const std::string& cache_root, const std::string& registry,
                        const std::string& repository, const manifest::Digest& digest);

}  // namespace carton::oci
