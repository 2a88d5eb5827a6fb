// Private: the CNCF ModelPack form of a carton artifact (oci/FORMAT.md
// "ModelPack artifacts"): each file's layer kind, its file metadata, and
// the spec's config blob. artifact.cc writes and parses the manifest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/manifest/sha256.h"

namespace carton::oci::internal {

// A layer's media type, "application/vnd.cncf.model.<kind>.v1.raw", for the
// file at `path` by the kind rule; `guessed` when no rule matched (the
// layer is then weight.config, annotated untested).
struct ModelPackLayerType {
  std::string media_type;
  bool guessed = false;
};
ModelPackLayerType ModelPackLayerTypeOf(std::string_view path);

// True for the five raw layer media types.
bool IsModelPackRawLayerType(std::string_view media_type);
// The weight.config raw media type (carton.toml, MANIFEST, LINKS and
// carton's own config have it).
std::string ModelPackWeightConfigType();

// The org.cncf.model.file.metadata+json annotation of the file at `path`
// of `size` bytes: fixed mode, owner and time, so pushes are deterministic.
std::string ModelPackFileMetadata(std::string_view path, std::uint64_t size);

// What the spec's config blob says; absent values are left out.
struct ModelPackConfig {
  std::string name;
  std::string version;
  std::optional<std::string> license;
  std::optional<std::string> title;
  std::optional<std::string> description;
  std::optional<std::string> doc_url;
  std::optional<std::string> source_url;
  std::optional<std::string> format;       // config.format
  std::vector<manifest::Digest> diff_ids;  // each layer's digest, in order
};

// The config blob (application/vnd.cncf.model.config.v1+json): only keys
// of the spec's schema; deterministic JSON (sorted keys, no whitespace).
std::string WriteModelPackConfig(const ModelPackConfig& config);

}  // namespace carton::oci::internal
