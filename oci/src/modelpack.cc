// The CNCF ModelPack form's layer kinds, file metadata and config blob
// (oci/FORMAT.md "ModelPack artifacts"). nlohmann/json stays here.
#include "modelpack.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>

namespace carton::oci::internal {
namespace {

using Json = nlohmann::json;

std::string_view BaseName(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The lowercase extension of `base` ("" when none).
std::string Extension(std::string_view base) {
  const std::size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  std::string ext(base.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

template <std::size_t N>
bool OneOf(std::string_view s, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool IsCode(std::string_view base, const std::string& ext) {
  return ext == "py" || ext == "sh" || ext == "lock" ||
         (base.starts_with("requirements") && ext == "txt");
}

bool IsWeightConfig(std::string_view path, std::string_view base, const std::string& ext) {
  if (path == "carton.toml" || path == "MANIFEST" || path == "LINKS") return true;
  if (base == "config.json" || base == "generation_config.json") return true;
  if (base.starts_with("tokenizer") && ext == "json") return true;
  return path.starts_with("model/") &&
         (ext == "json" || ext == "toml" || ext == "yaml" || ext == "yml");
}

bool IsWeight(const std::string& ext) {
  static constexpr std::array<std::string_view, 12> kWeights = {
      "safetensors", "bin", "pt",      "pth", "ckpt", "gguf",
      "onnx",        "h5",  "msgpack", "npz", "pb",   "tflite"};
  return OneOf(ext, kWeights);
}

bool IsDoc(std::string_view path, std::string_view base, const std::string& ext) {
  return base.starts_with("README") || base.starts_with("LICENSE") || ext == "md" || ext == "txt" ||
         path.starts_with("misc/");
}

std::string RawType(std::string_view kind) {
  return "application/vnd.cncf.model." + std::string(kind) + ".v1.raw";
}

}  // namespace

ModelPackLayerType ModelPackLayerTypeOf(std::string_view path) {
  const std::string_view base = BaseName(path);
  const std::string ext = Extension(base);
  // In this order: the first rule that matches decides.
  if (path == "carton.toml" || path == "MANIFEST" || path == "LINKS") {
    return {RawType("weight.config")};
  }
  if (path.starts_with("tensor_data/")) return {RawType("dataset")};
  if (IsCode(base, ext)) return {RawType("code")};
  if (IsWeightConfig(path, base, ext)) return {RawType("weight.config")};
  if (IsWeight(ext)) return {RawType("weight")};
  if (IsDoc(path, base, ext)) return {RawType("doc")};
  return {RawType("weight.config"), /*guessed=*/true};
}

bool IsModelPackRawLayerType(std::string_view media_type) {
  static constexpr std::array<std::string_view, 5> kKinds = {"weight", "weight.config", "doc",
                                                             "code", "dataset"};
  return std::any_of(kKinds.begin(), kKinds.end(),
                     [&](std::string_view k) { return media_type == RawType(k); });
}

std::string ModelPackWeightConfigType() { return RawType("weight.config"); }

std::string ModelPackFileMetadata(std::string_view path, std::uint64_t size) {
  const Json m = {{"name", std::string(BaseName(path))},
                  {"mode", 0644},
                  {"uid", 0},
                  {"gid", 0},
                  {"size", size},
                  {"mtime", "1970-01-01T00:00:00Z"},
                  {"typeflag", static_cast<int>('0')}};
  return m.dump();
}

std::string WriteModelPackConfig(const ModelPackConfig& c) {
  Json descriptor = {{"name", c.name}, {"version", c.version}};
  if (c.license) descriptor["licenses"] = Json::array({*c.license});
  if (c.title) descriptor["title"] = *c.title;
  if (c.description) descriptor["description"] = *c.description;
  if (c.doc_url) descriptor["docURL"] = *c.doc_url;
  if (c.source_url) descriptor["sourceURL"] = *c.source_url;
  Json config = Json::object();
  if (c.format) config["format"] = *c.format;
  Json diff_ids = Json::array();
  for (const manifest::Digest& d : c.diff_ids) diff_ids.push_back(manifest::DigestString(d));
  const Json root = {{"descriptor", std::move(descriptor)},
                     {"config", std::move(config)},
                     {"modelfs", {{"type", "layers"}, {"diffIds", std::move(diff_ids)}}}};
  return root.dump();
}

}  // namespace carton::oci::internal
