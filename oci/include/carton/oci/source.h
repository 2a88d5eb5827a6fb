// The source of oci:// references (carton/carton/source.h), registered in an
// Environment by the OCI module so that the operations on cartons, which
// know nothing of registries, read them as they read files and URLs:
//
//   ManifestHash()  one manifest request (the MANIFEST layer's digest), and
//                   MANIFEST's blob checked to be well-formed (kept in the
//                   blob cache); a ModelPack another tool wrote is imported
//                   first (it has no manifest hash until then)
//   Info()          the config, carton.toml, MANIFEST, LINKS and
//                   tensor_data/index.toml blobs only (artifact.h ReadOciInfo)
//   Reader(...)     the carton pulled (artifact.h PullCarton, every blob kept
//                   in the blob cache) into <cache>/downloads/pulled-<pid>-<n>.carton,
//                   removed with the source
//
// Thread-safety: AddOciSource is not thread-safe for one Environment.
#pragma once

#include "carton/carton/environment.h"

namespace carton::oci {

// Registers the OCI source in `environment` (its `sources`).
void AddOciSource(Environment& environment);

}  // namespace carton::oci
