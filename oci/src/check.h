// Private: the checks of a carton artifact's config blob and MANIFEST
// against each other and against the OCI manifest's layers (oci/
// FORMAT.md "Cartons as OCI artifacts"), made before any file blob is fetched.
#pragma once

#include <string>

#include "artifact.h"
#include "carton/common/status.h"
#include "carton/manifest/manifest.h"
#include "layout.h"

namespace carton::oci::internal {

// REQUIRES: each of the three parsed on its own (ParseOciArtifact,
// ParseOciLayout, Manifest::Parse). Every MANIFEST file has its layer, with
// its digest, and is a zip entry or linked, not both; nothing else but
// MANIFEST and LINKS has a layer or an entry; symlink entries name a file
// with the same sha256; the manifest hashes agree. Errors: kCorrupt,
// "WHERE: " and the rule.
Status CheckOciLayout(const OciArtifact& artifact, const OciLayout& layout,
                      const manifest::Manifest& manifest, const std::string& where);

}  // namespace carton::oci::internal
