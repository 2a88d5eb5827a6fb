// Private: the OCI image manifest of a carton artifact (carton/FORMAT.md
// "OCI artifacts"): writing it, and parsing one from a registry
// (untrusted), where anything but a carton is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::oci::internal {

struct OciLayer {
  std::string media_type;
  manifest::Digest digest{};
  std::uint64_t size = 0;
  std::string title;  // the path in the carton
};

struct OciArtifact {
  manifest::Digest config_digest{};
  std::uint64_t config_size = 0;
  // MANIFEST's files in MANIFEST order, then MANIFEST, then LINKS.
  std::vector<OciLayer> layers;
  manifest::Digest manifest_hash{};  // the MANIFEST layer's digest

  // The layer titled `title`, or nullptr.
  const OciLayer* Find(std::string_view title) const;
};

// The OCI image manifest: deterministic JSON (sorted keys, no whitespace),
// with artifactType and config media type kOciCartonMediaType and the
// manifest hash as an annotation.
std::string WriteOciArtifact(const OciArtifact& artifact);

// Parses a manifest from a registry. `where` names it in messages.
// Errors: kUnsupported (not a carton: an index, another config media
// type, another schema version), kCorrupt (a carton manifest that breaks
// the rules: unknown layer media types, titles that are missing, invalid
// or repeated, no MANIFEST layer, an annotation that disagrees).
Result<OciArtifact> ParseOciArtifact(std::string_view json, const std::string& where);

}  // namespace carton::oci::internal
