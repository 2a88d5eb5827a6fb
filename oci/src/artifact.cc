// The OCI image manifest of a carton. The only file that sees nlohmann/json
// for it (json.cc parses it); its exceptions stop here.
#include "artifact.h"

#include <nlohmann/json.hpp>
#include <set>

#include "carton/manifest/manifest.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"
#include "carton/zip/layout.h"
#include "carton/zip/reader.h"
#include "json.h"

namespace carton::oci::internal {
namespace {

using Json = nlohmann::json;
constexpr std::string_view kIndexMediaType = "application/vnd.oci.image.index.v1+json";
constexpr std::string_view kDockerListMediaType =
    "application/vnd.docker.distribution.manifest.list.v2+json";

Json Descriptor(std::string_view media_type, const manifest::Digest& digest, std::uint64_t size) {
  return Json{{"mediaType", std::string(media_type)},
              {"digest", manifest::DigestString(digest)},
              {"size", size}};
}

bool KnownLayerType(const std::string& t) {
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

// The config descriptor of a carton's manifest; kUnsupported when `root`
// is not one (another schema version, an index, another config type).
Result<const Json*> FindCartonConfig(const Json& root, const std::string& where) {
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
  if (ct != kOciCartonMediaType) {
    return NotCarton(where, "its config media type is " + QuoteZipEntryName(ct.substr(0, 200)) +
                                ", not " + std::string(kOciCartonMediaType));
  }
  return &*config;
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

// One layer descriptor, `at` in messages: a known media type, a digest, a
// size and a valid title.
Result<OciLayer> ReadLayer(const Json& l, const std::string& at, const std::string& where) {
  if (!l.is_object()) return BadArtifact(where, at + " must be an object");
  OciLayer layer;
  auto mt = l.find("mediaType");
  if (mt == l.end() || !mt->is_string()) return BadArtifact(where, at + ".mediaType is missing");
  layer.media_type = mt->get<std::string>();
  if (!KnownLayerType(layer.media_type)) {
    return BadArtifact(where, at + ": media type " +
                                  QuoteZipEntryName(layer.media_type.substr(0, 200)) +
                                  " is not a carton layer type");
  }
  CARTON_RETURN_IF_ERROR(ReadDescriptor(l, at, where, &layer.digest, &layer.size));
  auto ann = l.find("annotations");
  if (ann != l.end() && ann->is_object()) {
    auto t = ann->find(std::string(kOciTitleAnnotation));
    if (t != ann->end() && t->is_string()) layer.title = t->get<std::string>();
  }
  if (layer.title.empty()) {
    return BadArtifact(where, at + " has no " + std::string(kOciTitleAnnotation));
  }
  if (Status s = manifest::ValidateEntryPath(layer.title); !s.ok()) {
    return BadArtifact(where, at + ": title: " + s.message());
  }
  return layer;
}

// MANIFEST, LINKS and carton.toml have their own media types, and only they.
Status CheckLayerMediaType(const OciLayer& layer, const std::string& at, const std::string& where) {
  const bool is_manifest = layer.title == "MANIFEST";
  const bool is_links = layer.title == "LINKS";
  if (is_manifest != (layer.media_type == kOciManifestMediaType) ||
      is_links != (layer.media_type == kOciLinksMediaType) ||
      (layer.title == "carton.toml") != (layer.media_type == kOciCartonTomlMediaType)) {
    return BadArtifact(where, at + ": " + layer.title + " has media type " +
                                  QuoteZipEntryName(layer.media_type.substr(0, 200)));
  }
  return Status::Ok();
}

// Reads the layers into `a`: each titled once, one of them MANIFEST.
Status ReadLayers(const Json& root, const std::string& where, OciArtifact* a) {
  auto layers = root.find("layers");
  if (layers == root.end() || !layers->is_array()) {
    return BadArtifact(where, "layers must be an array");
  }
  if (layers->size() > kZipMaxEntries) return BadArtifact(where, "too many layers");
  std::set<std::string> titles;
  bool has_manifest = false;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const std::string at = "layers[" + std::to_string(i) + "]";
    CARTON_ASSIGN_OR_RETURN(OciLayer layer, ReadLayer((*layers)[i], at, where));
    if (!titles.insert(layer.title).second) {
      return BadArtifact(where, at + ": title " + layer.title + " repeats");
    }
    CARTON_RETURN_IF_ERROR(CheckLayerMediaType(layer, at, where));
    if (layer.title == "MANIFEST") {
      has_manifest = true;
      a->manifest_hash = layer.digest;
    }
    a->layers.push_back(std::move(layer));
  }
  if (!has_manifest) return BadArtifact(where, "no MANIFEST layer");
  return Status::Ok();
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

std::string WriteOciArtifact(const OciArtifact& a) {
  Json layers = Json::array();
  for (const OciLayer& l : a.layers) {
    Json d = Descriptor(l.media_type, l.digest, l.size);
    d["annotations"] = {{std::string(kOciTitleAnnotation), l.title}};
    layers.push_back(std::move(d));
  }
  Json root = {{"schemaVersion", 2},
               {"mediaType", std::string(oci::kImageManifestMediaType)},
               {"artifactType", std::string(kOciCartonMediaType)},
               {"config", Descriptor(kOciCartonMediaType, a.config_digest, a.config_size)},
               {"layers", std::move(layers)},
               {"annotations",
                {{std::string(kOciManifestHashAnnotation), manifest::ToHex(a.manifest_hash)}}}};
  return root.dump();
}

Result<OciArtifact> ParseOciArtifact(std::string_view json, const std::string& where) {
  const JsonErrorWording wording{
      .invalid_code = StatusCode::kUnsupported,
      .invalid_prefix = where + ": not a carton: the manifest is not valid JSON: ",
      .too_deep_code = StatusCode::kCorrupt,
      .too_deep_message = where + ": the manifest's JSON is nested too deeply"};
  CARTON_ASSIGN_OR_RETURN(Json root, ParseBoundedJson(json, kMaxArtifactJsonDepth, wording));
  CARTON_ASSIGN_OR_RETURN(const Json* config, FindCartonConfig(root, where));
  OciArtifact a;
  CARTON_RETURN_IF_ERROR(
      ReadDescriptor(*config, "config", where, &a.config_digest, &a.config_size));
  CARTON_RETURN_IF_ERROR(ReadLayers(root, where, &a));
  CARTON_RETURN_IF_ERROR(CheckManifestHashAnnotation(root, a, where));
  return a;
}

}  // namespace carton::oci::internal
