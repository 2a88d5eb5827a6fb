// Private: the seam where the loader reads cartons from OCI registries, as
// CartonSource::Open is for URLs. Load(oci://...) needs the manifest hash (one
// manifest request: its MANIFEST layer's digest) and, on a miss, the carton
// (pulled: carton/oci/artifact.h). loader/FORMAT.md "OCI references".
#pragma once

#include <string>

#include "carton/carton/info.h"
#include "carton/common/status.h"
#include "carton/loader/loader.h"

namespace carton::loader::internal {

// The manifest hash of the carton at `reference`.
Result<manifest::Digest> ResolveOci(const std::string& reference, const LoadOptions& options);

// Pulls the carton to `dest_path` (atomically); its blobs stay in the blob
// cache of the loader's cache root.
Status PullOci(const std::string& reference, const std::string& dest_path,
               const LoadOptions& options);

// carton.toml, MANIFEST and tensor_data/index.toml from their blobs.
Result<CartonInfo> ReadOciInfo(const std::string& reference);

}  // namespace carton::loader::internal
