// Private: what importing a ModelPack (import.h) reads before it fetches
// a layer: the OCI manifest's layers and the spec's config blob (its
// descriptor and DiffIDs), both untrusted, and the carton.toml made from
// them. nlohmann/json stays in import_plan.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "carton/format/config.h"
#include "carton/links/blob_cache.h"
#include "carton/manifest/sha256.h"
#include "carton/oci/artifact.h"
#include "layer_stream.h"
#include "session.h"

namespace carton::oci::internal {

enum class LayerEncoding : std::uint8_t { kRaw, kTar, kTarGzip, kTarZstd };

LayerCompression CompressionOf(LayerEncoding encoding);

// The encoding of layer media type `type`
// (application/vnd.cncf.model.<kind>.v1.<encoding>, or the older
// vnd.cnai.model prefix), or nullopt when it is not a ModelPack layer type.
std::optional<LayerEncoding> LayerEncodingOf(std::string_view type);

struct ImportLayer {
  std::string at;  // "layers[3]", for messages
  LayerEncoding encoding = LayerEncoding::kRaw;
  manifest::Digest digest{};
  std::uint64_t size = 0;
  std::string path;            // raw: the file's path (org.cncf.model.filepath)
  manifest::Digest diff_id{};  // from the config's modelfs.diffIds
};

struct ImportPlan {
  manifest::Digest config_digest{};
  std::uint64_t config_size = 0;
  std::vector<ImportLayer> layers;
  // The config's descriptor; absent or empty values are nullopt.
  std::optional<std::string> name, license, title, description, doc_url, source_url;
};

// The layers of a ModelPack manifest. Errors: kCorrupt (a layer without
// a digest, size or, for raw layers, filepath annotation; a bad digest),
// kUnsupported (a layer media type that is not a ModelPack one; a size
// over the carton limits; another digest algorithm).
Result<ImportPlan> ParseImportManifest(std::string_view manifest_json, const std::string& where);

// Fetches the config blob (held in `uses`, reported in `report`) and reads
// its descriptor and DiffIDs into `plan`: one per layer, a raw or plain
// tar layer's its own digest. Errors: kCorrupt, the fetch's.
Status ReadImportConfig(const OciSession& session, links::BlobsInUse* uses, ImportPlan* plan,
                        OciPullReport* report);

// carton.toml for the imported model: the descriptor's values, and the
// runner `carton init` would guess from the files at the model's top
// (noop when none fits).
CartonConfig ImportedConfig(const ImportPlan& plan, const std::string& repository,
                            const std::set<std::string>& files);

}  // namespace carton::oci::internal
