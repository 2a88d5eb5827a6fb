// The OCI image manifest of a carton, in both forms (carton's own and
// ModelPack). The only file that sees nlohmann/json for it (json.cc parses
// it); its exceptions stop here.
#include "artifact.h"

#include <nlohmann/json.hpp>
#include <set>

#include "carton/manifest/manifest.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"
#include "carton/zip/layout.h"
#include "carton/zip/reader.h"
#include "json.h"
#include "modelpack.h"

namespace carton::oci::internal {
namespace {

using Json = nlohmann::json;
constexpr std::string_view kIndexMediaType = "application/vnd.oci.image.index.v1+json";
constexpr std::string_view kDockerListMediaType =
    "application/vnd.docker.distribution.manifest.list.v2+json";
constexpr std::string_view kOlderModelPackConfigMediaType =
    "application/vnd.cnai.model.config.v1+json";

Json Descriptor(std::string_view media_type, const manifest::Digest& digest, std::uint64_t size) {
  return Json{{"mediaType", std::string(media_type)},
              {"digest", manifest::DigestString(digest)},
              {"size", size}};
}

bool KnownLayerType(const std::string& t, OciFormat format) {
  if (format == OciFormat::kModelPack) return IsModelPackRawLayerType(t);
  return t == kOciFileMediaType || t == kOciCartonTomlMediaType || t == kOciManifestMediaType ||
         t == kOciLinksMediaType;
}

// kUnsupported: the manifest `where` is not a carton's, for reason `why`.
Status NotCarton(const std::string& where, const std::string& why) {
  return Unsupported(where + ": not a carton: " + why);
}

// kCorrupt: the carton manifest `where` breaks a rule, `why`.
Status BadArtifact(const std::string& where, const std::string& why) {
  return Corrupt(where + ": " + why);
}

// The config descriptor of a carton's manifest and its form; kUnsupported
// when `root` is not one (another schema version, an index, another config
// type).
struct FoundConfig {
  const Json* config = nullptr;
  OciFormat format = OciFormat::kCarton;
};
Result<FoundConfig> FindCartonConfig(const Json& root, const std::string& where) {
  if (!root.is_object()) return NotCarton(where, "the manifest is not a JSON object");
  auto schema = root.find("schemaVersion");
  if (schema == root.end() || !schema->is_number_integer() || schema->get<std::int64_t>() != 2) {
    return NotCarton(where, "schemaVersion is not 2");
  }
  if (auto mt = root.find("mediaType"); mt != root.end()) {
    const std::string t = mt->is_string() ? mt->get<std::string>() : "";
    if (t == kIndexMediaType || t == kDockerListMediaType) {
      return NotCarton(where, "it is an index of manifests (" + t + ")");
    }
  }
  auto config = root.find("config");
  if (config == root.end() || !config->is_object()) return NotCarton(where, "it has no config");
  auto config_type = config->find("mediaType");
  const std::string ct = config_type != config->end() && config_type->is_string()
                             ? config_type->get<std::string>()
                             : "";
  if (ct == kModelPackConfigMediaType) return FoundConfig{&*config, OciFormat::kModelPack};
  // The spec's older name: never carton's, always imported.
  if (ct == kOlderModelPackConfigMediaType) return FoundConfig{&*config, OciFormat::kModelPack};
  if (ct != kOciCartonMediaType) {
    return NotCarton(where, "its config media type is " + QuoteZipEntryName(ct.substr(0, 200)) +
                                ", not " + std::string(kOciCartonMediaType));
  }
  return FoundConfig{&*config, OciFormat::kCarton};
}

// Reads the digest and size of descriptor `d`, named `at` in messages.
Status ReadDescriptor(const Json& d, const std::string& at, const std::string& where,
                      manifest::Digest* digest, std::uint64_t* size) {
  auto dg = d.find("digest");
  auto sz = d.find("size");
  if (dg == d.end() || !dg->is_string()) return BadArtifact(where, at + ".digest is missing");
  auto parsed = manifest::ParseDigestString(dg->get<std::string>());
  if (!parsed.ok()) {
    // Another algorithm is unsupported; anything else is a bad manifest
    // (not the caller's argument).
    const StatusCode code = parsed.status().code() == StatusCode::kUnsupported
                                ? StatusCode::kUnsupported
                                : StatusCode::kCorrupt;
    return Status(code, where + ": " + at + ": " + parsed.status().message());
  }
  *digest = *parsed;
  if (sz == d.end() || !sz->is_number_unsigned())
    return BadArtifact(where, at + ".size is missing");
  *size = sz->get<std::uint64_t>();
  return Status::Ok();
}

// The string annotation `key` of object `j`, or "" when there is none.
std::string StringAnnotation(const Json& j, std::string_view key) {
  auto ann = j.find("annotations");
  if (ann == j.end() || !ann->is_object()) return "";
  auto v = ann->find(std::string(key));
  return v != ann->end() && v->is_string() ? v->get<std::string>() : "";
}

// The path of layer `l`: its title; in a ModelPack its filepath, which a
// title, when there is one, must repeat.
Result<std::string> LayerPath(const Json& l, OciFormat format, const std::string& at,
                              const std::string& where) {
  const std::string title = StringAnnotation(l, kOciTitleAnnotation);
  if (format == OciFormat::kCarton) {
    if (title.empty())
      return BadArtifact(where, at + " has no " + std::string(kOciTitleAnnotation));
    return title;
  }
  const std::string path = StringAnnotation(l, kModelPackFilepathAnnotation);
  if (path.empty()) {
    return BadArtifact(where, at + " has no " + std::string(kModelPackFilepathAnnotation));
  }
  if (!title.empty() && title != path) {
    return BadArtifact(where, at + ": " + std::string(kOciTitleAnnotation) + " and " +
                                  std::string(kModelPackFilepathAnnotation) + " differ");
  }
  return path;
}

// One layer descriptor, `at` in messages: a known media type, a digest, a
// size and a valid path.
Result<OciLayer> ReadLayer(const Json& l, OciFormat format, const std::string& at,
                           const std::string& where) {
  if (!l.is_object()) return BadArtifact(where, at + " must be an object");
  OciLayer layer;
  auto mt = l.find("mediaType");
  if (mt == l.end() || !mt->is_string()) return BadArtifact(where, at + ".mediaType is missing");
  layer.media_type = mt->get<std::string>();
  if (!KnownLayerType(layer.media_type, format)) {
    return BadArtifact(where,
                       at + ": media type " + QuoteZipEntryName(layer.media_type.substr(0, 200)) +
                           (format == OciFormat::kCarton ? " is not a carton layer type"
                                                         : " is not a raw ModelPack layer type"));
  }
  CARTON_RETURN_IF_ERROR(ReadDescriptor(l, at, where, &layer.digest, &layer.size));
  CARTON_ASSIGN_OR_RETURN(layer.title, LayerPath(l, format, at, where));
  if (Status s = manifest::ValidateEntryPath(layer.title); !s.ok()) {
    return BadArtifact(where, at + ": title: " + s.message());
  }
  return layer;
}

// MANIFEST, LINKS and carton.toml have their own media types, and only
// they; in a ModelPack they (and carton's config) are weight.config.
Status CheckLayerMediaType(const OciLayer& layer, OciFormat format, const std::string& at,
                           const std::string& where) {
  const bool is_manifest = layer.title == "MANIFEST";
  const bool is_links = layer.title == "LINKS";
  const bool is_toml = layer.title == "carton.toml";
  bool ok = true;
  if (format == OciFormat::kModelPack) {
    ok = !(is_manifest || is_links || is_toml || layer.title == kModelPackCartonConfigPath) ||
         layer.media_type == ModelPackWeightConfigType();
  } else {
    ok = is_manifest == (layer.media_type == kOciManifestMediaType) &&
         is_links == (layer.media_type == kOciLinksMediaType) &&
         is_toml == (layer.media_type == kOciCartonTomlMediaType);
  }
  if (!ok) {
    return BadArtifact(where, at + ": " + layer.title + " has media type " +
                                  QuoteZipEntryName(layer.media_type.substr(0, 200)));
  }
  return Status::Ok();
}

// A ModelPack's layer of carton's config: the one the
// kModelPackCartonConfigAnnotation names (`digest`), at its path.
Status TakeCartonConfigLayer(const OciLayer& layer, const manifest::Digest& digest,
                             const std::string& at, const std::string& where, OciArtifact* a) {
  if (layer.digest != digest) {
    return BadArtifact(where, at + ": " + layer.title + " is not the layer " +
                                  std::string(kModelPackCartonConfigAnnotation) + " names");
  }
  a->config_digest = layer.digest;
  a->config_size = layer.size;
  return Status::Ok();
}

// Reads the layers into `a`: each titled once, one of them MANIFEST; in a
// ModelPack, one of them carton's config, whose digest is `carton_config`.
Status ReadLayers(const Json& root, const std::string& where,
                  const std::optional<manifest::Digest>& carton_config, OciArtifact* a) {
  auto layers = root.find("layers");
  if (layers == root.end() || !layers->is_array()) {
    return BadArtifact(where, "layers must be an array");
  }
  if (layers->size() > kZipMaxEntries) return BadArtifact(where, "too many layers");
  std::set<std::string> titles;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const std::string at = "layers[" + std::to_string(i) + "]";
    CARTON_ASSIGN_OR_RETURN(OciLayer layer, ReadLayer((*layers)[i], a->format, at, where));
    if (!titles.insert(layer.title).second) {
      return BadArtifact(where, at + ": title " + layer.title + " repeats");
    }
    CARTON_RETURN_IF_ERROR(CheckLayerMediaType(layer, a->format, at, where));
    if (carton_config && layer.title == kModelPackCartonConfigPath) {
      CARTON_RETURN_IF_ERROR(TakeCartonConfigLayer(layer, *carton_config, at, where, a));
      continue;
    }
    if (layer.title == "MANIFEST") a->manifest_hash = layer.digest;
    a->layers.push_back(std::move(layer));
  }
  if (!titles.contains("MANIFEST")) return BadArtifact(where, "no MANIFEST layer");
  if (carton_config && !titles.contains(std::string(kModelPackCartonConfigPath))) {
    return BadArtifact(where, "no " + std::string(kModelPackCartonConfigPath) + " layer");
  }
  return Status::Ok();
}

// Whether carton wrote the ModelPack `root`: it has the
// kModelPackCartonConfigAnnotation and the manifest hash's.
bool WrittenByCarton(const Json& root) {
  if (auto config = root.find("config"); config != root.end() && config->is_object()) {
    auto type = config->find("mediaType");
    if (type != config->end() && *type == kOlderModelPackConfigMediaType) return false;
  }
  return !StringAnnotation(root, kModelPackCartonConfigAnnotation).empty() &&
         !StringAnnotation(root, kOciManifestHashAnnotation).empty();
}

// A ModelPack's carton config digest (kModelPackCartonConfigAnnotation).
// REQUIRES: WrittenByCarton(root).
Result<manifest::Digest> ModelPackCartonConfig(const Json& root, const std::string& where) {
  const std::string config = StringAnnotation(root, kModelPackCartonConfigAnnotation);
  auto digest = manifest::ParseDigestString(config);
  if (!digest.ok()) {
    return BadArtifact(
        where, std::string(kModelPackCartonConfigAnnotation) + ": " + digest.status().message());
  }
  return *digest;
}

// The manifest hash annotation, when there is one, names the MANIFEST
// layer's digest.
Status CheckManifestHashAnnotation(const Json& root, const OciArtifact& a,
                                   const std::string& where) {
  if (auto ann = root.find("annotations"); ann != root.end() && ann->is_object()) {
    auto h = ann->find(std::string(kOciManifestHashAnnotation));
    if (h != ann->end()) {
      if (!h->is_string() || h->get<std::string>() != manifest::ToHex(a.manifest_hash)) {
        return BadArtifact(where, std::string(kOciManifestHashAnnotation) +
                                      " does not name the MANIFEST layer's digest");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

const OciLayer* OciArtifact::Find(std::string_view title) const {
  for (const OciLayer& l : layers) {
    if (l.title == title) return &l;
  }
  return nullptr;
}

namespace {

// A layer descriptor: its media type, digest, size and annotations.
Json LayerDescriptor(const OciLayer& l, OciFormat format) {
  Json d = Descriptor(l.media_type, l.digest, l.size);
  d["annotations"] = {{std::string(kOciTitleAnnotation), l.title}};
  if (format == OciFormat::kModelPack) {
    d["annotations"][std::string(kModelPackFilepathAnnotation)] = l.title;
    d["annotations"][std::string(kModelPackMetadataAnnotation)] =
        ModelPackFileMetadata(l.title, l.size);
    if (l.kind_guessed) d["annotations"][std::string(kModelPackUntestedAnnotation)] = "true";
  }
  return d;
}

// The layer of carton's config in a ModelPack.
OciLayer CartonConfigLayer(const OciArtifact& a) {
  return {ModelPackWeightConfigType(), a.config_digest, a.config_size,
          std::string(kModelPackCartonConfigPath)};
}

}  // namespace

std::vector<manifest::Digest> ModelPackLayerDigests(const OciArtifact& a) {
  std::vector<manifest::Digest> digests;
  for (const OciLayer& l : a.layers) digests.push_back(l.digest);
  digests.push_back(a.config_digest);
  return digests;
}

std::string WriteOciArtifact(const OciArtifact& a) {
  const bool modelpack = a.format == OciFormat::kModelPack;
  Json layers = Json::array();
  for (const OciLayer& l : a.layers) layers.push_back(LayerDescriptor(l, a.format));
  Json annotations = {{std::string(kOciManifestHashAnnotation), manifest::ToHex(a.manifest_hash)}};
  if (modelpack) {
    layers.push_back(LayerDescriptor(CartonConfigLayer(a), a.format));
    annotations[std::string(kModelPackCartonConfigAnnotation)] =
        manifest::DigestString(a.config_digest);
  }
  Json root = {
      {"schemaVersion", 2},
      {"mediaType", std::string(oci::kImageManifestMediaType)},
      {"artifactType", std::string(modelpack ? kModelPackArtifactType : kOciCartonMediaType)},
      {"config",
       modelpack ? Descriptor(kModelPackConfigMediaType, a.model_config_digest, a.model_config_size)
                 : Descriptor(kOciCartonMediaType, a.config_digest, a.config_size)},
      {"layers", std::move(layers)},
      {"annotations", std::move(annotations)}};
  return root.dump();
}

Result<OciArtifact> ParseOciArtifact(std::string_view json, const std::string& where) {
  const JsonErrorWording wording{
      .invalid_code = StatusCode::kUnsupported,
      .invalid_prefix = where + ": not a carton: the manifest is not valid JSON: ",
      .too_deep_code = StatusCode::kCorrupt,
      .too_deep_message = where + ": the manifest's JSON is nested too deeply"};
  CARTON_ASSIGN_OR_RETURN(Json root, ParseBoundedJson(json, kMaxArtifactJsonDepth, wording));
  CARTON_ASSIGN_OR_RETURN(const FoundConfig found, FindCartonConfig(root, where));
  OciArtifact a;
  a.format = found.format;
  std::optional<manifest::Digest> carton_config;
  if (a.format == OciFormat::kModelPack) {
    CARTON_RETURN_IF_ERROR(ReadDescriptor(*found.config, "config", where, &a.model_config_digest,
                                          &a.model_config_size));
    if (!WrittenByCarton(root)) {
      a.foreign = true;
      return a;
    }
    CARTON_ASSIGN_OR_RETURN(carton_config, ModelPackCartonConfig(root, where));
  } else {
    CARTON_RETURN_IF_ERROR(
        ReadDescriptor(*found.config, "config", where, &a.config_digest, &a.config_size));
  }
  CARTON_RETURN_IF_ERROR(ReadLayers(root, where, carton_config, &a));
  CARTON_RETURN_IF_ERROR(CheckManifestHashAnnotation(root, a, where));
  return a;
}

}  // namespace carton::oci::internal
