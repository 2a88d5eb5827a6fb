// Private: the seam where the loader reads cartons from OCI registries, as
// CartonSource::Open is for URLs. Load(oci://...) needs the manifest hash (one
// manifest request: its MANIFEST layer's digest) and, on a miss, the carton
// (pulled: carton/oci/artifact.h). loader/FORMAT.md "OCI references".
#pragma once

#include <optional>
#include <string>

#include "carton/carton/info.h"
#include "carton/common/status.h"
#include "carton/loader/cartons.h"
#include "carton/loader/loader.h"
#include "carton/oci/artifact.h"

namespace carton::loader::internal {

// The OCI module's options for `access` (registry access, the cache root,
// jobs) with `threads` for rebuilding zstd entries.
oci::OciOptions OciOptionsFor(const AccessOptions& access, unsigned threads);

// The registry access, cache root and link settings of `options`.
AccessOptions AccessFor(const LoadOptions& options);

// The manifest hash of the carton at `reference`; nullopt for a ModelPack
// carton did not write, which has none until it is imported (pulled).
Result<std::optional<manifest::Digest>> ResolveOci(const Location& reference,
                                                   const LoadOptions& options);

// Pulls the carton to `dest_path` (atomically); its blobs stay in the blob
// cache of the loader's cache root.
Status PullOci(const Location& reference, const std::string& dest_path, const LoadOptions& options);

}  // namespace carton::loader::internal
