#include "carton/loader/loader.h"

#include <filesystem>

#include "cache_internal.h"
#include "carton/carton/reader.h"
#include "carton/common/atomic_file.h"
#include "carton/common/mapped_file.h"
#include "carton/links/blob_cache.h"
#include "carton/links/cache_layout.h"
#include "carton/manifest/manifest.h"
#include "loaded.h"

namespace carton::loader {
namespace {

namespace fs = std::filesystem;
using internal::FileView;

Result<CartonConfig> ReadConfigFile(const std::string& root) {
  std::string path = root + "/carton.toml";
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() > kMaxConfigSize) {
    return Corrupt(path + ": " + std::to_string(bytes->size()) + " bytes, over the limit");
  }
  return ParseConfig(AsChars(*bytes), path);
}

std::string Absolute(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

// Builds a LoadedCarton from a cache entry or an unpacked directory.
Result<LoadedCarton> Finish(std::shared_ptr<internal::CartonState> impl,
                            const internal::ViewProvider& views,
                            const std::vector<std::string>* paths = nullptr) {
  if (impl->model_dir.empty()) impl->model_dir = impl->root_dir + "/model";
  CARTON_RETURN_IF_ERROR(internal::BuildContents(impl.get(), views, paths));
  return internal::LoadedCartonFactory::Make(std::move(impl));
}

Result<LoadedCarton> FromEntry(internal::AcquiredEntry entry, LoadStats stats) {
  auto impl = std::make_shared<internal::CartonState>();
  impl->root_dir = entry.dir;
  impl->hash = entry.record.manifest_hash;
  if (entry.hit) internal::PrefetchEntry(entry.dir, entry.record);
  auto config = ReadConfigFile(entry.dir);
  if (!config.ok()) return config.status();
  impl->config = std::move(config).value();
  // Large stored safetensors and tensor_data files are views into the
  // verified .carton the entry links (zero-copy); the rest are the entry's
  // files.
  std::map<std::string, const internal::EntryFile*> mapped;
  std::vector<std::string> paths;
  for (const auto& f : entry.record.files) {
    if (f.mapped) mapped[f.path] = &f;
    paths.push_back(f.path);
  }
  std::shared_ptr<const MappedFile> source;
  if (!mapped.empty()) {
    auto opened = MappedFile::Open(entry.dir + "/" + std::string(internal::kSourceName));
    if (!opened.ok()) return opened.status();
    source = std::make_shared<const MappedFile>(std::move(opened).value());
    impl->carton_mapping = source->bytes();
    impl->carton_owner = source;
  }
  stats.cache_hit = entry.hit;
  stats.mapped_from_carton = source != nullptr;
  impl->stats = stats;
  impl->use_lock = std::move(entry.use_lock);
  auto views = [mapped = std::move(mapped),
                source](const std::string& path) -> std::optional<FileView> {
    auto it = mapped.find(path);
    if (it == mapped.end() || source == nullptr) return std::nullopt;
    const internal::EntryFile& f = *it->second;
    if (!InBounds(f.data_offset, f.size, source->size())) return FileView{};
    return FileView{source->bytes().subspan(f.data_offset, f.size), source};
  };
  return Finish(std::move(impl), views, &paths);
}

// A carton archive (a file, a URL, an oci:// reference): the entry named
// by its manifest hash, made on a miss (AcquireEntry).
Result<LoadedCarton> LoadCarton(CartonSource& source, const LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(std::string root, source.environment().CacheRoot());
  CARTON_ASSIGN_OR_RETURN(const manifest::Digest hash, source.ManifestHash());
  LoadStats stats;
  CARTON_ASSIGN_OR_RETURN(internal::AcquiredEntry entry,
                          internal::AcquireEntry(root, source, hash, options, &stats));
  return FromEntry(std::move(entry), stats);
}

// A cache entry given by its directory (runners are handed these): its
// mapped files come from the linked source, as for any hit.
Result<LoadedCarton> LoadEntryDirectory(const std::string& dir, const LoadOptions& options,
                                        unsigned threads) {
  std::string abs = Absolute(dir);
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  fs::path p(abs);
  std::string hex = p.filename().string();
  internal::AcquiredEntry entry;
  entry.dir = abs;
  entry.hit = true;
  if (manifest::ParseHex(hex)) {
    std::string root = p.parent_path().parent_path().string();
    CARTON_ASSIGN_OR_RETURN(entry.use_lock,
                            FileLock::Open(links::CacheLayout(root).CartonUseLockPath(hex)));
    CARTON_ASSIGN_OR_RETURN(bool locked, entry.use_lock.Lock(FileLock::Mode::kShared));
    (void)locked;
  }
  CARTON_ASSIGN_OR_RETURN(entry.record, internal::ReadEntryRecord(abs));
  CARTON_RETURN_IF_ERROR(internal::QuickCheck(abs, entry.record));
  if (options.verify_cache_hit) {
    CARTON_ASSIGN_OR_RETURN(auto problems,
                            internal::VerifyEntryDir(abs, entry.record.manifest_hash, threads));
    if (!problems.empty()) return Corrupt("cache entry " + abs + ": " + problems.front());
  }
  return FromEntry(std::move(entry), LoadStats{});
}

Result<LoadedCarton> LoadDirectory(const std::string& dir, const LoadOptions& options,
                                   unsigned threads) {
  std::error_code ec;
  if (fs::exists(dir + "/" + std::string(internal::kEntryRecordName), ec)) {
    return LoadEntryDirectory(dir, options, threads);
  }
  auto impl = std::make_shared<internal::CartonState>();
  impl->root_dir = Absolute(dir);
  auto config = ReadConfigFile(impl->root_dir);
  if (!config.ok()) {
    if (config.status().code() == StatusCode::kNotFound) {
      return NotFound(
          dir + ": no carton.toml: not a carton directory (pack it with `carton pack` first)");
    }
    return config.status();
  }
  impl->config = std::move(config).value();
  // The layout `carton init` writes: carton.toml beside the model's files,
  // with no model/ folder. The folder itself is the model directory.
  if (!fs::is_directory(impl->root_dir + "/model", ec)) impl->model_dir = impl->root_dir;
  auto bytes = ReadFile(impl->root_dir + "/" + std::string(manifest::kManifestPath));
  if (bytes.ok()) {
    const manifest::Digest hash = manifest::Sha256Of(*bytes);
    impl->hash = hash;
    if (options.verify_cache_hit) {
      CARTON_ASSIGN_OR_RETURN(auto problems,
                              internal::VerifyEntryDir(impl->root_dir, hash, threads));
      if (!problems.empty()) return Corrupt(dir + ": " + problems.front());
    }
  }
  return Finish(std::move(impl), [](const std::string&) { return std::nullopt; });
}

}  // namespace

Result<LoadedCarton> Load(CartonSource& source, const LoadOptions& options) {
  if (const std::string& dir = source.directory(); !dir.empty()) {
    return LoadDirectory(dir, options, source.environment().threads);
  }
  return LoadCarton(source, options);
}

Result<LoadedCarton> LoadUnpacked(const std::string& dir, const std::string& runner_name,
                                  const std::string& framework_version,
                                  std::uint64_t runner_compat_version) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": not a directory");
  auto impl = std::make_shared<internal::CartonState>();
  impl->config.runner.runner_name = runner_name;
  impl->config.runner.required_framework_version = framework_version;
  impl->config.runner.runner_compat_version = runner_compat_version;
  Status s = ValidateConfig(impl->config);
  if (!s.ok()) return InvalidArgument(s.message());
  impl->root_dir = Absolute(dir);
  impl->model_dir = impl->root_dir;
  return internal::LoadedCartonFactory::Make(std::move(impl));
}

}  // namespace carton::loader
