#include "carton_testing.h"

#include <catch2/catch.hpp>
#include <filesystem>

namespace carton::testing {

void WriteTree(const std::string& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [path, content] : files) {
    std::filesystem::path p = std::filesystem::path(dir) / path;
    std::filesystem::create_directories(p.parent_path());
    WriteBytes(p.string(), AsBytes(content));
  }
}

void WriteArchive(const std::string& path, const std::map<std::string, std::string>& files,
                  const std::map<std::string, std::string>* manifest_files, bool with_manifest) {
  auto zip = ZipWriter::Create(path);
  REQUIRE(zip.ok());
  for (const auto& [name, content] : files) {
    REQUIRE(zip->AddBytes(name, AsBytes(content), Compression::kStored).ok());
  }
  if (with_manifest) {
    std::vector<manifest::ManifestEntry> entries;
    for (const auto& [name, content] : manifest_files ? *manifest_files : files) {
      if (manifest::IsReservedPath(name)) continue;
      entries.push_back({name, manifest::Sha256Of(AsBytes(content))});
    }
    auto m = manifest::Manifest::FromEntries(entries);
    REQUIRE(m.ok());
    REQUIRE(zip->AddBytes("MANIFEST", AsBytes(m->Serialize()), Compression::kStored).ok());
  }
  REQUIRE(zip->Finish().ok());
}

}  // namespace carton::testing
