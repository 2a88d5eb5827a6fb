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
#include "carton/oci/artifact.h"

namespace carton::oci::internal {

struct OciLayer {
  std::string media_type;
  manifest::Digest digest{};
  std::uint64_t size = 0;
  std::string title;  // the path in the carton
  // ModelPack: the kind was guessed (annotated untested).
  bool kind_guessed = false;
};

struct OciArtifact {
  OciFormat format = OciFormat::kCarton;
  // Carton's config (how to rebuild the zip): the config blob, or in a
  // ModelPack the layer kModelPackCartonConfigPath.
  manifest::Digest config_digest{};
  std::uint64_t config_size = 0;
  // MANIFEST's files in MANIFEST order, then MANIFEST, then LINKS (a
  // ModelPack's carton config layer is not among them).
  std::vector<OciLayer> layers;
  manifest::Digest manifest_hash{};  // the MANIFEST layer's digest
  // ModelPack: the spec's config blob (kModelPackConfigMediaType).
  manifest::Digest model_config_digest{};
  std::uint64_t model_config_size = 0;
  // A ModelPack carton did not write (no dev.carton.config and
  // dev.carton.manifest-hash annotations): only `format` and the model
  // config are read; the layers are import.h's to read.
  bool foreign = false;

  // The layer titled `title`, or nullptr.
  const OciLayer* Find(std::string_view title) const;
};

// The OCI image manifest: deterministic JSON (sorted keys, no whitespace),
// with the manifest hash as an annotation. kCarton: artifactType and config
// media type kOciCartonMediaType, the layers' media types as given.
// kModelPack: the spec's artifactType and config, each layer's media type
// by the kind rule with its file annotations, carton's config as one more
// layer last, named by the kModelPackCartonConfigAnnotation annotation.
std::string WriteOciArtifact(const OciArtifact& artifact);

// The digests of a ModelPack's layers in order (its config's diffIds):
// the layers', then carton's config.
std::vector<manifest::Digest> ModelPackLayerDigests(const OciArtifact& artifact);

// Parses a manifest from a registry, either form. `where` names it in
// messages. A ModelPack without carton's annotations is not an error: it
// comes back `foreign`, its layers unread (import.h reads them). Errors:
// kUnsupported (not a carton: an index, another config media type,
// another schema version), kCorrupt (a carton manifest that breaks the
// rules: unknown layer media types, titles that are missing, invalid or
// repeated, no MANIFEST layer, an annotation that disagrees).
Result<OciArtifact> ParseOciArtifact(std::string_view json, const std::string& where);

}  // namespace carton::oci::internal
