#include "carton/carton/pack.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <system_error>
#include <thread>

#include "carton/common/atomic_file.h"
#include "carton/common/file_identity.h"
#include "carton/format/tensor_data.h"
#include "carton/manifest/hash_files.h"
#include "carton/manifest/manifest.h"
#include "pack_walk.h"
#include "writer_options.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

Compression ChooseMethod(const PackOptions& options, const internal::SourceFile& f) {
  switch (options.compression) {
    case PackCompression::kStored:
      return Compression::kStored;
    case PackCompression::kDeflate:
      return Compression::kDeflate;
    case PackCompression::kZstd:
      return Compression::kZstd;
    case PackCompression::kAuto:
      break;
  }
  if (f.size >= options.auto_store_size || f.size == 0) return Compression::kStored;
  return ZstdPays(f.full_path, f.size) ? Compression::kZstd : Compression::kStored;
}

// One entry to write: a file on disk, or bytes generated here.
struct Item {
  std::string path;
  const internal::SourceFile* file = nullptr;
  std::string generated;
};

// carton.toml and tensor_data/index.toml must be valid before they are
// packed: a carton that `carton verify` would reject is never written.
// index.toml is always written, normalized (`inner = []` on every entry,
// `tensor = []` when empty), because the original implementation's reader
// requires both.
Result<std::vector<Item>> PlanItems(const std::string& dir,
                                    const std::vector<internal::SourceFile>& files,
                                    const PackOptions& options) {
  std::vector<Item> items;
  bool has_config = false, has_index = false, has_tensor_files = false;
  for (const auto& f : files) {
    if (f.path == "carton.toml") {
      has_config = true;
      CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(f.full_path));
      auto config = ParseConfig(AsChars(bytes), dir + "/carton.toml");
      if (!config.ok()) return config.status();
    } else if (f.path == "tensor_data/index.toml") {
      has_index = true;
      CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(f.full_path));
      auto index = ParseIndex(AsChars(bytes));
      if (!index.ok()) return index.status().WithContext(dir);
      items.push_back({f.path, nullptr, WriteIndex(*index)});
      continue;
    } else if (f.path.rfind("tensor_data/", 0) == 0) {
      has_tensor_files = true;
    }
    items.push_back({f.path, &f, {}});
  }
  if (!has_config) {
    if (!options.config_if_missing) {
      return InvalidArgument(
          dir + ": no carton.toml; give --runner and --framework-version to create one");
    }
    CARTON_ASSIGN_OR_RETURN(std::string text, WriteConfig(*options.config_if_missing));
    items.push_back({"carton.toml", nullptr, std::move(text)});
  }
  if (!has_index) {
    if (has_tensor_files) {
      return InvalidArgument(dir + "/tensor_data: holds files but no index.toml");
    }
    items.push_back({"tensor_data/index.toml", nullptr, WriteIndex(TensorDataIndex{})});
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.path < b.path; });
  return items;
}

}  // namespace

Result<PackReport> Pack(const std::string& dir, const std::string& out_path,
                        const PackOptions& options) {
  CARTON_ASSIGN_OR_RETURN(std::vector<internal::SourceFile> files,
                          internal::WalkModelDir(dir, out_path));
  CARTON_ASSIGN_OR_RETURN(std::vector<Item> items, PlanItems(dir, files, options));
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());

  ZipWriterOptions writer_options = internal::CartonWriterOptions(threads, options.alignment);
  std::uint64_t total_bytes = 0, done_bytes = 0;
  for (const auto& item : items) total_bytes += item.file ? item.file->size : item.generated.size();
  if (options.progress) {
    writer_options.on_read = [&](std::uint64_t n) {
      options.progress(done_bytes += n, total_bytes);
    };
  }
  CARTON_ASSIGN_OR_RETURN(ZipWriter zip, ZipWriter::Create(out_path, writer_options));

  PackReport report;
  std::vector<manifest::ManifestEntry> entries;
  // Stored files are not read when added: Finish() reads each once as it
  // writes it, while other threads hash them (checking they hash the version
  // written); MANIFEST, written last, waits for those hashes.
  std::vector<std::size_t> unread;  // indexes into entries and report.files
  std::vector<std::string> unread_paths;
  std::vector<FileIdentity> unread_versions;
  ZipAddOptions add;
  add.sha256 = true;
  for (const auto& item : items) {
    Compression method;
    auto r = [&]() -> Result<ZipAddResult> {
      if (item.file != nullptr) {
        method = ChooseMethod(options, *item.file);
        if (method == Compression::kStored)
          return zip.AddFileUnread(item.path, item.file->full_path);
        return zip.AddFile(item.path, item.file->full_path, method, options.level, add);
      }
      // Generated metadata is small text: zstd under auto.
      internal::SourceFile virtual_file{item.path, "", item.generated.size()};
      method = options.compression == PackCompression::kAuto ? Compression::kZstd
                                                             : ChooseMethod(options, virtual_file);
      return zip.AddBytes(item.path, AsBytes(item.generated), method, options.level, add);
    }();
    if (!r.ok()) return r.status();
    if (!r->sha256) {
      unread.push_back(entries.size());
      unread_paths.push_back(item.file->full_path);
      unread_versions.push_back(r->source_identity);
    }
    const manifest::Digest digest = r->sha256.value_or(manifest::Digest{});
    report.files.push_back({item.path, r->size, r->compressed_size, method, digest});
    entries.push_back({item.path, digest});
  }
  // Every line of MANIFEST has the same length whatever the digest, so its
  // size is known before the hashes are.
  CARTON_ASSIGN_OR_RETURN(manifest::Manifest sized, manifest::Manifest::FromEntries(entries));
  const std::uint64_t manifest_size = sized.Serialize().size();

  Result<std::vector<manifest::Digest>> digests = std::vector<manifest::Digest>();
  auto hash_unread = [&] {
    try {
      digests = manifest::HashFiles(unread_paths, threads, unread_versions);
    } catch (const std::exception& e) {
      digests = Internal(std::string("hashing stored files: ") + e.what());
    }
  };
  std::jthread hasher;
  if (!unread.empty()) {
    try {
      hasher = std::jthread(hash_unread);
    } catch (const std::system_error&) {
      hash_unread();  // no thread to spare: hash before writing
    }
  }
  manifest::Digest manifest_hash{};
  auto produce_manifest = [&]() -> Result<std::string> {
    if (hasher.joinable()) hasher.join();
    if (!digests.ok()) return digests.status();
    for (std::size_t k = 0; k < unread.size(); ++k) {
      entries[unread[k]].sha256 = (*digests)[k];
      report.files[unread[k]].sha256 = (*digests)[k];
    }
    CARTON_ASSIGN_OR_RETURN(manifest::Manifest m, manifest::Manifest::FromEntries(entries));
    manifest_hash = m.Hash();
    return m.Serialize();
  };
  // MANIFEST is stored, as the original implementation does, so readers can
  // take it without a decoder.
  CARTON_ASSIGN_OR_RETURN(auto mr, zip.AddLater("MANIFEST", manifest_size, produce_manifest));
  (void)mr;
  CARTON_RETURN_IF_ERROR(zip.Finish());
  report.manifest_hash = manifest_hash;
  return report;
}

}  // namespace carton
