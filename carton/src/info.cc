#include "carton/carton/info.h"

#include "archive.h"
#include "carton/carton/zip.h"
#include "carton/manifest/manifest.h"

namespace carton {
namespace {

struct ManifestRead {
  manifest::Manifest manifest;
  manifest::Digest hash;
};

Result<ManifestRead> ReadManifest(const ZipReader& zip, const std::string& source,
                                  std::uint64_t limit = kMaxManifestSize) {
  auto text = internal::ReadTextEntry(zip, "MANIFEST", limit);
  if (!text.ok()) {
    Status s = text.status();
    if (s.code() == StatusCode::kNotFound) s = Corrupt("MANIFEST: missing");
    return s.WithContext(source);
  }
  auto m = manifest::Manifest::Parse(AsBytes(*text));
  if (!m.ok()) return m.status().WithContext(source);
  return ManifestRead{std::move(m).value(), manifest::Sha256Of(AsBytes(*text))};
}

}  // namespace

Result<manifest::Digest> ManifestHash(const std::string& carton_path, const LinkOptions& options) {
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, OpenCarton(carton_path, options));
  CARTON_ASSIGN_OR_RETURN(ManifestRead m, ReadManifest(zip, carton_path));
  return m.hash;
}

Result<CartonInfo> ReadInfo(const std::string& carton_path, const LinkOptions& options,
                            const CartonLimits& limits) {
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, OpenCarton(carton_path, options, limits.zip));
  CARTON_ASSIGN_OR_RETURN(ManifestRead m, ReadManifest(zip, carton_path, limits.max_manifest_size));
  Status entries = internal::FirstEntryProblem(zip, m.manifest);
  if (!entries.ok()) return entries.WithContext(carton_path);
  auto links = ReadLinks(zip, limits.links);
  if (!links.ok()) return links.status().WithContext(carton_path);
  auto linked = LinkedFiles(zip, m.manifest, *links);
  if (!linked.ok()) return linked.status().WithContext(carton_path);
  CartonInfo info;
  info.manifest_hash = m.hash;
  info.has_links = zip.Find("LINKS") != nullptr;

  auto config_text = internal::ReadTextEntry(zip, "carton.toml", limits.config.max_size);
  if (!config_text.ok()) {
    Status s = config_text.status();
    if (s.code() == StatusCode::kNotFound) s = Corrupt("carton.toml: missing");
    return s.WithContext(carton_path);
  }
  auto config = ParseConfig(*config_text, "carton.toml", limits.config);
  if (!config.ok()) return config.status().WithContext(carton_path);
  info.config = std::move(config).value();

  if (zip.Find("tensor_data/index.toml") != nullptr) {
    auto text =
        internal::ReadTextEntry(zip, "tensor_data/index.toml", limits.tensor_data.max_index_size);
    if (!text.ok()) return text.status().WithContext(carton_path);
    auto index = ParseIndex(*text, limits.tensor_data);
    if (!index.ok()) return index.status().WithContext(carton_path);
    info.tensor_index = std::move(index).value();
  }

  for (const auto& me : m.manifest.entries()) {
    CartonFileInfo f;
    f.path = me.path;
    const ZipEntry* e = zip.Find(me.path);
    if (e == nullptr) {
      f.linked = true;
      f.method = "linked";
    } else {
      f.size = e->size;
      f.compressed_size = e->compressed_size;
      auto c = CompressionFromZipMethod(e->method);
      f.method = c ? std::string(CompressionName(*c)) : "method " + std::to_string(e->method);
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

}  // namespace carton
