// The OCI image manifest of a carton. The only file that sees nlohmann/json
// for it; its exceptions stop here.
#include "artifact.h"

#include <nlohmann/json.hpp>
#include <set>

#include "carton/manifest/manifest.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"
#include "carton/zip/layout.h"
#include "carton/zip/reader.h"

namespace carton::oci::internal {
namespace {

using Json = nlohmann::json;
constexpr int kMaxJsonDepth = 8;
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
  auto not_carton = [&](const std::string& why) {
    return Unsupported(where + ": not a carton: " + why);
  };
  auto bad = [&](const std::string& why) { return Corrupt(where + ": " + why); };
  bool too_deep = false;
  Json::parser_callback_t limit = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth > kMaxJsonDepth) {
      too_deep = true;
    }
    return !too_deep;
  };
  Json root;
  try {
    root = Json::parse(json.begin(), json.end(), limit);
  } catch (const Json::exception& e) {
    return not_carton(std::string("the manifest is not valid JSON: ") + e.what());
  }
  if (too_deep) return bad("the manifest's JSON is nested too deeply");
  if (!root.is_object()) return not_carton("the manifest is not a JSON object");
  auto schema = root.find("schemaVersion");
  if (schema == root.end() || !schema->is_number_integer() || schema->get<std::int64_t>() != 2) {
    return not_carton("schemaVersion is not 2");
  }
  if (auto mt = root.find("mediaType"); mt != root.end()) {
    const std::string t = mt->is_string() ? mt->get<std::string>() : "";
    if (t == kIndexMediaType || t == kDockerListMediaType) {
      return not_carton("it is an index of manifests (" + t + ")");
    }
  }
  auto config = root.find("config");
  if (config == root.end() || !config->is_object()) return not_carton("it has no config");
  auto config_type = config->find("mediaType");
  const std::string ct = config_type != config->end() && config_type->is_string()
                             ? config_type->get<std::string>()
                             : "";
  if (ct != kOciCartonMediaType) {
    return not_carton("its config media type is " + QuoteZipEntryName(ct.substr(0, 200)) +
                      ", not " + std::string(kOciCartonMediaType));
  }

  auto read_descriptor = [&](const Json& d, const std::string& at, manifest::Digest* digest,
                             std::uint64_t* size) -> Status {
    auto dg = d.find("digest");
    auto sz = d.find("size");
    if (dg == d.end() || !dg->is_string()) return bad(at + ".digest is missing");
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
    if (sz == d.end() || !sz->is_number_unsigned()) return bad(at + ".size is missing");
    *size = sz->get<std::uint64_t>();
    return Status::Ok();
  };

  OciArtifact a;
  CARTON_RETURN_IF_ERROR(read_descriptor(*config, "config", &a.config_digest, &a.config_size));
  auto layers = root.find("layers");
  if (layers == root.end() || !layers->is_array()) return bad("layers must be an array");
  if (layers->size() > kZipMaxEntries) return bad("too many layers");
  std::set<std::string> titles;
  bool has_manifest = false;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const Json& l = (*layers)[i];
    const std::string at = "layers[" + std::to_string(i) + "]";
    if (!l.is_object()) return bad(at + " must be an object");
    OciLayer layer;
    auto mt = l.find("mediaType");
    if (mt == l.end() || !mt->is_string()) return bad(at + ".mediaType is missing");
    layer.media_type = mt->get<std::string>();
    if (!KnownLayerType(layer.media_type)) {
      return bad(at + ": media type " + QuoteZipEntryName(layer.media_type.substr(0, 200)) +
                 " is not a carton layer type");
    }
    CARTON_RETURN_IF_ERROR(read_descriptor(l, at, &layer.digest, &layer.size));
    auto ann = l.find("annotations");
    if (ann != l.end() && ann->is_object()) {
      auto t = ann->find(std::string(kOciTitleAnnotation));
      if (t != ann->end() && t->is_string()) layer.title = t->get<std::string>();
    }
    if (layer.title.empty()) return bad(at + " has no " + std::string(kOciTitleAnnotation));
    if (Status s = manifest::ValidateEntryPath(layer.title); !s.ok()) {
      return bad(at + ": title: " + s.message());
    }
    if (!titles.insert(layer.title).second) return bad(at + ": title " + layer.title + " repeats");
    const bool is_manifest = layer.title == "MANIFEST";
    const bool is_links = layer.title == "LINKS";
    if (is_manifest != (layer.media_type == kOciManifestMediaType) ||
        is_links != (layer.media_type == kOciLinksMediaType) ||
        (layer.title == "carton.toml") != (layer.media_type == kOciCartonTomlMediaType)) {
      return bad(at + ": " + layer.title + " has media type " +
                 QuoteZipEntryName(layer.media_type.substr(0, 200)));
    }
    if (is_manifest) {
      has_manifest = true;
      a.manifest_hash = layer.digest;
    }
    a.layers.push_back(std::move(layer));
  }
  if (!has_manifest) return bad("no MANIFEST layer");
  if (auto ann = root.find("annotations"); ann != root.end() && ann->is_object()) {
    auto h = ann->find(std::string(kOciManifestHashAnnotation));
    if (h != ann->end()) {
      if (!h->is_string() || h->get<std::string>() != manifest::ToHex(a.manifest_hash)) {
        return bad(std::string(kOciManifestHashAnnotation) +
                   " does not name the MANIFEST layer's digest");
      }
    }
  }
  return a;
}

}  // namespace carton::oci::internal
