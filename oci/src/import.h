// Private: importing a CNCF ModelPack that carton did not write into a
// carton (oci/FORMAT.md "Importing a ModelPack"): its layers (raw files
// and tars, plain, gzip or zstd) become files under model/, its config's
// descriptor becomes carton.toml, and Pack writes the carton. Everything
// from the registry is untrusted: each blob is checked against its digest
// and size (oci::Client), each layer against its DiffID, each path by the
// zip entry rules, before the carton is written; on any error nothing is
// left at the output path nor in the temporary directory beside it.
#pragma once

#include <string>
#include <string_view>

#include "carton/links/blob_cache.h"
#include "carton/oci/artifact.h"
#include "session.h"

namespace carton::oci::internal {

// Imports the ModelPack whose OCI manifest is `manifest_json` (from the
// registry of `session`) and writes the carton to `out_path`. The blobs
// go into the blob cache, held in `uses`. The report's manifest_digest is
// left for the caller. Errors: kCorrupt (a manifest, config, tar or blob
// that breaks the rules; a DiffID that does not match), kUnsupported
// (links, devices and other entry types; a size over the limits; another
// layer media type), kNotFound, kNetworkError, kIoError, and Pack's.
Result<OciPullReport> ImportModelPack(const OciSession& session, std::string_view manifest_json,
                                      const std::string& out_path, const OciOptions& options,
                                      links::BlobsInUse* uses);

}  // namespace carton::oci::internal
