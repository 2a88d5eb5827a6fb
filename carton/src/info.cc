#include "carton/carton/info.h"

#include "carton/carton/reader.h"

namespace carton {

Result<manifest::Digest> ManifestHash(const Location& carton_path_at, const LinkOptions& options) {
  const std::string& carton_path = carton_path_at.text();
  CARTON_ASSIGN_OR_RETURN(CartonReader reader, CartonReader::Open(carton_path_at, options));
  CARTON_RETURN_IF_ERROR(reader.ReadManifest().WithContext(carton_path));
  return reader.manifest_file().hash;
}

Result<CartonInfo> ReadInfo(const Location& carton_path_at, const LinkOptions& options,
                            const CartonLimits& limits) {
  CARTON_ASSIGN_OR_RETURN(CartonReader reader, CartonReader::Open(carton_path_at, options, limits));
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ZipReader& zip = reader.zip();
  CartonInfo info;
  info.manifest_hash = reader.manifest_file().hash;
  info.has_links = zip.Find("LINKS") != nullptr;

  // Check() read and parsed carton.toml and index.toml.
  info.config = reader.config();
  info.tensor_index = reader.tensor_index();

  for (const auto& me : reader.manifest().entries()) {
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
