#include "carton/carton/pack.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "carton/carton/tensor_data.h"
#include "carton/common/atomic_file.h"
#include "carton/manifest/manifest.h"
#include "pack_walk.h"
#include "zstd_probe.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

Compression ChooseMethod(const PackOptions& options, const internal::SourceFile& f) {
  switch (options.compression) {
    case PackCompression::kStored: return Compression::kStored;
    case PackCompression::kDeflate: return Compression::kDeflate;
    case PackCompression::kZstd: return Compression::kZstd;
    case PackCompression::kAuto: break;
  }
  if (f.size >= options.auto_store_size || f.size == 0) return Compression::kStored;
  return internal::ZstdPays(f.full_path, f.size) ? Compression::kZstd : Compression::kStored;
}

// carton.toml and tensor_data/index.toml must be valid before they are
// packed: a carton that `carton verify` would reject is never written.
Status CheckMetadata(const std::string& dir, std::vector<internal::SourceFile>* files,
                     const PackOptions& options, std::optional<std::string>* generated_config) {
  auto has = [&](std::string_view p) {
    return std::any_of(files->begin(), files->end(), [&](auto& f) { return f.path == p; });
  };
  if (has("carton.toml")) {
    CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(dir + "/carton.toml"));
    auto config = ParseConfig(AsChars(bytes), dir + "/carton.toml");
    if (!config.ok()) return config.status();
  } else if (options.config_if_missing) {
    CARTON_ASSIGN_OR_RETURN(std::string text, WriteConfig(*options.config_if_missing));
    *generated_config = std::move(text);
  } else {
    return InvalidArgument(dir + ": no carton.toml; give --runner and --framework-version to create one");
  }
  if (has("tensor_data/index.toml")) {
    CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(dir + "/tensor_data/index.toml"));
    auto index = ParseIndex(AsChars(bytes));
    if (!index.ok()) return index.status().WithContext(dir);
  }
  return Status::Ok();
}

}  // namespace

Result<PackReport> Pack(const std::string& dir, const std::string& out_path,
                        const PackOptions& options) {
  CARTON_ASSIGN_OR_RETURN(std::vector<internal::SourceFile> files, internal::WalkModelDir(dir));
  std::optional<std::string> generated_config;
  CARTON_RETURN_IF_ERROR(CheckMetadata(dir, &files, options, &generated_config));

  ZipWriterOptions zopts;
  zopts.alignment = options.alignment;
  zopts.zstd_workers = options.zstd_workers;
  CARTON_ASSIGN_OR_RETURN(ZipWriter zip, ZipWriter::Create(out_path, zopts));

  PackReport report;
  std::vector<manifest::ManifestEntry> entries;
  ZipAddOptions add;
  add.sha256 = true;
  auto record = [&](const std::string& path, const ZipAddResult& r, Compression method) {
    report.files.push_back({path, r.size, r.compressed_size, method, *r.sha256});
    entries.push_back({path, *r.sha256});
  };
  if (generated_config) {
    // Sorted order puts carton.toml among the other files; it is generated
    // from flags, so it goes first.
    Compression method = options.compression == PackCompression::kAuto ||
                                 options.compression == PackCompression::kZstd
                             ? Compression::kZstd
                             : options.compression == PackCompression::kDeflate
                                   ? Compression::kDeflate
                                   : Compression::kStored;
    CARTON_ASSIGN_OR_RETURN(auto r, zip.AddBytes("carton.toml", AsBytes(*generated_config),
                                                 method, options.level, add));
    record("carton.toml", r, method);
  }
  for (const auto& f : files) {
    Compression method = ChooseMethod(options, f);
    auto r = zip.AddFile(f.path, f.full_path, method, options.level, add);
    if (!r.ok()) return r.status();
    record(f.path, *r, method);
  }
  CARTON_ASSIGN_OR_RETURN(manifest::Manifest m, manifest::Manifest::FromEntries(entries));
  std::string manifest_text = m.Serialize();
  // MANIFEST is stored, as the original implementation does, so readers can
  // take it without a decoder.
  CARTON_ASSIGN_OR_RETURN(auto mr, zip.AddBytes("MANIFEST", AsBytes(manifest_text),
                                                Compression::kStored));
  (void)mr;
  CARTON_RETURN_IF_ERROR(zip.Finish());
  report.manifest_hash = m.Hash();
  return report;
}

}  // namespace carton
