// Reading a foreign ModelPack's manifest and config (import_plan.h,
// oci/FORMAT.md "Importing a ModelPack"). nlohmann/json's exceptions stay
// in json.cc; the values are checked here.
#include "import_plan.h"

#include <array>

#include "carton/common/atomic_file.h"
#include "carton/zip/layout.h"
#include "carton/zip/reader.h"
#include "json.h"
#include "layout.h"

namespace carton::oci::internal {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::string_view, 2> kPrefixes = {"application/vnd.cncf.model.",
                                                       "application/vnd.cnai.model."};
constexpr std::array<std::string_view, 5> kKinds = {"weight", "weight.config", "doc", "code",
                                                    "dataset"};
constexpr std::array<std::string_view, 2> kFilepathAnnotations = {"org.cncf.model.filepath",
                                                                  "org.cnai.model.filepath"};

// The digest and size of descriptor `d` (`at` in messages).
Status ReadDigestAndSize(const Json& d, const std::string& at, manifest::Digest* digest,
                         std::uint64_t* size) {
  if (!d.is_object()) return Corrupt(at + " must be an object");
  auto dg = d.find("digest");
  if (dg == d.end() || !dg->is_string()) return Corrupt(at + ".digest is missing");
  auto parsed = manifest::ParseDigestString(dg->get<std::string>());
  if (!parsed.ok()) {
    const StatusCode code = parsed.status().code() == StatusCode::kUnsupported
                                ? StatusCode::kUnsupported
                                : StatusCode::kCorrupt;
    return Status(code, at + ": " + parsed.status().message());
  }
  *digest = *parsed;
  auto sz = d.find("size");
  if (sz == d.end() || !sz->is_number_unsigned()) return Corrupt(at + ".size is missing");
  *size = sz->get<std::uint64_t>();
  if (*size > kZipMaxTotalSize) {
    return Unsupported(at + ": a declared size of " + std::to_string(*size) +
                       " bytes, more than the limit of " + std::to_string(kZipMaxTotalSize));
  }
  return Status::Ok();
}

// The file path annotation of raw layer `l`.
Result<std::string> FilepathOf(const Json& l, const std::string& at) {
  auto ann = l.find("annotations");
  if (ann != l.end() && ann->is_object()) {
    for (std::string_view key : kFilepathAnnotations) {
      auto v = ann->find(std::string(key));
      if (v != ann->end() && v->is_string() && !v->get<std::string>().empty()) {
        return v->get<std::string>();
      }
    }
  }
  return Corrupt(at + ": a raw layer without an org.cncf.model.filepath annotation");
}

Result<ImportLayer> ReadImportLayer(const Json& l, const std::string& where, std::size_t i) {
  ImportLayer layer;
  layer.at = "layers[" + std::to_string(i) + "]";
  const std::string at = where + ": " + layer.at;
  CARTON_RETURN_IF_ERROR(ReadDigestAndSize(l, at, &layer.digest, &layer.size));
  auto mt = l.find("mediaType");
  const std::string type = mt != l.end() && mt->is_string() ? mt->get<std::string>() : "";
  const std::optional<LayerEncoding> encoding = LayerEncodingOf(type);
  if (!encoding) {
    return Unsupported(at + ": media type " + QuoteZipEntryName(type.substr(0, 200)) +
                       " is not a ModelPack layer type");
  }
  layer.encoding = *encoding;
  if (layer.encoding == LayerEncoding::kRaw) {
    CARTON_ASSIGN_OR_RETURN(layer.path, FilepathOf(l, at));
  }
  return layer;
}

// A string of `object` at `key`; nullopt when absent, null or empty.
Result<std::optional<std::string>> OptionalString(const Json& object, const char* key,
                                                  const std::string& at) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return Corrupt(at + "." + key + " is not a string");
  std::string v = it->get<std::string>();
  if (v.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(v));
}

Status ReadDescriptor(const Json& root, const std::string& at, ImportPlan* plan) {
  auto d = root.find("descriptor");
  if (d == root.end()) return Status::Ok();
  if (!d->is_object()) return Corrupt(at + " is not an object");
  CARTON_ASSIGN_OR_RETURN(plan->name, OptionalString(*d, "name", at));
  CARTON_ASSIGN_OR_RETURN(plan->title, OptionalString(*d, "title", at));
  CARTON_ASSIGN_OR_RETURN(plan->description, OptionalString(*d, "description", at));
  CARTON_ASSIGN_OR_RETURN(plan->doc_url, OptionalString(*d, "docURL", at));
  CARTON_ASSIGN_OR_RETURN(plan->source_url, OptionalString(*d, "sourceURL", at));
  if (auto l = d->find("licenses"); l != d->end() && !l->is_null()) {
    if (!l->is_array() || (!l->empty() && !(*l)[0].is_string())) {
      return Corrupt(at + ".licenses is not an array of strings");
    }
    if (!l->empty() && !(*l)[0].get<std::string>().empty()) {
      plan->license = (*l)[0].get<std::string>();
    }
  }
  return Status::Ok();
}

// modelfs.diffIds: one per layer; a raw or plain tar layer's is its digest
// (its bytes are the uncompressed content), checked here before any layer
// is fetched.
Status ReadDiffIds(const Json& root, const std::string& at, ImportPlan* plan) {
  auto fs = root.find("modelfs");
  if (fs == root.end() || !fs->is_object()) return Corrupt(at + ".modelfs is missing");
  auto type = fs->find("type");
  if (type == fs->end() || *type != "layers")
    return Corrupt(at + ".modelfs.type is not \"layers\"");
  auto ids = fs->find("diffIds");
  if (ids == fs->end() || !ids->is_array() || ids->size() != plan->layers.size()) {
    return Corrupt(at + ".modelfs.diffIds must list one DiffID per layer (" +
                   std::to_string(plan->layers.size()) + ")");
  }
  for (std::size_t i = 0; i < plan->layers.size(); ++i) {
    ImportLayer& l = plan->layers[i];
    const std::string id_at = at + ".modelfs.diffIds[" + std::to_string(i) + "]";
    const Json& id = (*ids)[i];
    auto parsed = manifest::ParseDigestString(id.is_string() ? id.get<std::string>() : "");
    if (!parsed.ok()) return Corrupt(id_at + ": " + parsed.status().message());
    l.diff_id = *parsed;
    const bool uncompressed =
        l.encoding == LayerEncoding::kRaw || l.encoding == LayerEncoding::kTar;
    if (uncompressed && l.diff_id != l.digest) {
      return Corrupt(id_at + " is " + manifest::DigestString(l.diff_id) + ", but " + l.at +
                     " is uncompressed: its DiffID must be its digest " +
                     manifest::DigestString(l.digest));
    }
  }
  return Status::Ok();
}

}  // namespace

LayerCompression CompressionOf(LayerEncoding encoding) {
  if (encoding == LayerEncoding::kTarGzip) return LayerCompression::kGzip;
  if (encoding == LayerEncoding::kTarZstd) return LayerCompression::kZstd;
  return LayerCompression::kNone;
}

std::optional<LayerEncoding> LayerEncodingOf(std::string_view type) {
  std::string_view rest;
  for (std::string_view p : kPrefixes) {
    if (type.starts_with(p)) rest = type.substr(p.size());
  }
  const std::size_t v1 = rest.find(".v1.");
  if (v1 == std::string_view::npos) return std::nullopt;
  const std::string_view kind = rest.substr(0, v1);
  const std::string_view encoding = rest.substr(v1 + 4);
  if (std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) return std::nullopt;
  if (encoding == "raw") return LayerEncoding::kRaw;
  if (encoding == "tar") return LayerEncoding::kTar;
  if (encoding == "tar+gzip") return LayerEncoding::kTarGzip;
  if (encoding == "tar+zstd") return LayerEncoding::kTarZstd;
  return std::nullopt;
}

Result<ImportPlan> ParseImportManifest(std::string_view manifest_json, const std::string& where) {
  const JsonErrorWording wording{
      .invalid_code = StatusCode::kCorrupt,
      .invalid_prefix = where + ": the manifest is not valid JSON: ",
      .too_deep_code = StatusCode::kCorrupt,
      .too_deep_message = where + ": the manifest's JSON is nested too deeply"};
  CARTON_ASSIGN_OR_RETURN(Json root,
                          ParseBoundedJson(manifest_json, kMaxArtifactJsonDepth, wording));
  ImportPlan plan;
  auto config = root.find("config");
  if (config == root.end()) return Corrupt(where + ": the manifest has no config");
  CARTON_RETURN_IF_ERROR(
      ReadDigestAndSize(*config, where + ": config", &plan.config_digest, &plan.config_size));
  auto layers = root.find("layers");
  if (layers == root.end() || !layers->is_array() || layers->empty()) {
    return Corrupt(where + ": layers must be an array of at least one layer");
  }
  if (layers->size() > kZipMaxEntries) return Unsupported(where + ": too many layers");
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    CARTON_ASSIGN_OR_RETURN(ImportLayer layer, ReadImportLayer((*layers)[i], where, i));
    if (layer.size > kZipMaxTotalSize - total) {
      return Unsupported(where + ": the layers declare more than " +
                         std::to_string(kZipMaxTotalSize) + " bytes in all");
    }
    total += layer.size;
    plan.layers.push_back(std::move(layer));
  }
  return plan;
}

Status ReadImportConfig(const OciSession& s, links::BlobsInUse* uses, ImportPlan* plan,
                        OciPullReport* report) {
  const std::string at = s.where + ": config";
  CARTON_RETURN_IF_ERROR(uses->Hold(plan->config_digest).WithContext(s.where));
  if (plan->config_size > kMaxOciLayoutSize) {
    return Unsupported(at + ": " + std::to_string(plan->config_size) +
                       " bytes, more than the limit of " + std::to_string(kMaxOciLayoutSize));
  }
  const bool cached = s.cache.Get(plan->config_digest).ok();
  CARTON_ASSIGN_OR_RETURN(
      std::string path,
      s.client->FetchBlob(s.cache, s.ref.repository, plan->config_digest, plan->config_size));
  report->blobs.push_back(
      {"(config)", plan->config_digest, plan->config_size, cached ? "cached" : "downloaded"});
  if (!cached) report->bytes_downloaded += plan->config_size;
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  const JsonErrorWording wording{.invalid_code = StatusCode::kCorrupt,
                                 .invalid_prefix = at + ": not valid JSON: ",
                                 .too_deep_code = StatusCode::kCorrupt,
                                 .too_deep_message = at + ": its JSON is nested too deeply"};
  CARTON_ASSIGN_OR_RETURN(Json root,
                          ParseBoundedJson(AsChars(bytes), kMaxArtifactJsonDepth, wording));
  if (!root.is_object()) return Corrupt(at + " is not a JSON object");
  CARTON_RETURN_IF_ERROR(ReadDescriptor(root, at + ": descriptor", plan));
  return ReadDiffIds(root, at, plan);
}

CartonConfig ImportedConfig(const ImportPlan& plan, const std::string& repository,
                            const std::set<std::string>& files) {
  CartonConfig c;
  const std::size_t slash = repository.rfind('/');
  c.model_name = plan.name
                     ? *plan.name
                     : (slash == std::string::npos ? repository : repository.substr(slash + 1));
  c.license = plan.license;
  c.short_description = plan.title ? plan.title : plan.description;
  c.model_description = plan.description;
  c.homepage = plan.doc_url;
  c.repository = plan.source_url;
  c.runner.runner_compat_version = kDefaultRunnerCompatVersion;
  c.runner.required_framework_version = "*";
  // As `carton init` guesses: model.pt, else the only .pt at the top
  // (torchscript); main.py (python); weights alone run on noop.
  std::vector<std::string> pt;
  for (const std::string& f : files) {
    if (f.find('/') == std::string::npos && f.ends_with(".pt")) pt.push_back(f);
  }
  if (files.contains("model.pt")) {
    c.runner.runner_name = "torchscript";
  } else if (pt.size() == 1) {
    c.runner.runner_name = "torchscript";
    c.runner.opts["model_path"] = RunnerOpt(pt[0]);
  } else if (files.contains("main.py")) {
    c.runner.runner_name = "python";
    c.runner.opts["entrypoint_package"] = RunnerOpt(std::string("main"));
    c.runner.opts["entrypoint_fn"] = RunnerOpt(std::string("get_model"));
  } else {
    c.runner.runner_name = "noop";
  }
  return c;
}

}  // namespace carton::oci::internal
