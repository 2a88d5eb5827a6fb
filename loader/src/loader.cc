#include "carton/loader/loader.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

#include "cache_internal.h"
#include "carton/carton/zip.h"
#include "carton/common/atomic_file.h"
#include "carton/common/mapped_file.h"
#include "carton/links/blob_cache.h"
#include "carton/links/oci.h"
#include "carton/manifest/manifest.h"
#include "loaded.h"
#include "oci_remote.h"
#include "remote.h"

namespace carton::loader {
namespace {

namespace fs = std::filesystem;
using internal::FileView;

constexpr std::uint64_t kMaxManifestSize = 64ull << 20;

Result<std::string> CacheRoot(const LoadOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  return links::DefaultCacheDir();
}

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
Result<LoadedCarton> Finish(std::shared_ptr<LoadedCarton::Impl> impl,
                            const internal::ViewProvider& views,
                            const std::vector<std::string>* paths = nullptr) {
  if (impl->model_dir.empty()) impl->model_dir = impl->root_dir + "/model";
  CARTON_RETURN_IF_ERROR(internal::BuildContents(impl.get(), views, paths));
  return LoadedCarton(std::move(impl));
}

Result<LoadedCarton> FromEntry(internal::AcquiredEntry entry, LoadStats stats) {
  auto impl = std::make_shared<LoadedCarton::Impl>();
  impl->root_dir = entry.dir;
  impl->hash = manifest::ParseHex(entry.record.manifest_hash);
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

// MANIFEST's bytes from an opened carton.
Result<std::vector<std::byte>> ReadManifestEntry(const ZipReader& zip, const std::string& path) {
  const ZipEntry* me = zip.Find("MANIFEST");
  if (me == nullptr) return Corrupt(path + ": MANIFEST: missing");
  if (me->size > kMaxManifestSize) return Corrupt(path + ": MANIFEST: too large");
  auto bytes = zip.Read("MANIFEST");
  if (!bytes.ok()) return bytes.status().WithContext(path);
  return std::move(bytes).value();
}

// The manifest hash of the carton at `path`, read through small reads of
// its end records, central directory and MANIFEST only: none of the other
// bytes of the archive are touched, so a cache hit costs the same for any
// size of model, with the file's pages cold or warm.
Result<std::string> ManifestHashOf(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(auto source, OpenFileSource(path));
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::OpenSource(std::move(source)));
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadManifestEntry(zip, path));
  CARTON_RETURN_IF_ERROR(manifest::Manifest::Parse(bytes).status().WithContext(path));
  return manifest::ToHex(manifest::Sha256Of(bytes));
}

// `held`: the materialize lock LoadUrl holds (AcquireEntry); it has
// already looked for a hit.
Result<LoadedCarton> LoadFile(const std::string& path, const LoadOptions& options,
                              internal::FileLock* held = nullptr) {
  CARTON_ASSIGN_OR_RETURN(std::string root, CacheRoot(options));
  // A hit is decided by MANIFEST alone: the entry's files were checked
  // against it when the entry was made, so what else this file holds does
  // not matter. A miss (or an archive the quick read cannot handle) opens
  // and checks the whole archive below.
  if (held == nullptr) {
    if (auto hex = ManifestHashOf(path); hex.ok()) {
      LoadStats stats;
      auto hit = internal::AcquireEntry(root, *hex, nullptr, options.verify_cache_hit, &stats);
      if (hit.ok()) return FromEntry(std::move(hit).value(), stats);
      if (hit.status().code() != StatusCode::kNotFound) return hit.status();
    }
  }
  CARTON_ASSIGN_OR_RETURN(ZipReader opened, ZipReader::Open(path));
  auto zip = std::make_shared<const ZipReader>(std::move(opened));
  auto bytes = ReadManifestEntry(*zip, path);
  if (!bytes.ok()) return bytes.status();
  auto m = manifest::Manifest::Parse(*bytes);
  if (!m.ok()) return m.status().WithContext(path);
  std::string hex = manifest::ToHex(manifest::Sha256Of(*bytes));

  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return IoError(path + ": cannot open: " + std::strerror(errno));
  internal::MaterializeSource src;
  src.zip = zip.get();
  src.carton_path = path;
  src.carton_fd = fd.get();
  src.manifest = &*m;
  src.manifest_text = std::string(AsChars(*bytes));
  src.cache_root = root;
  src.threads = options.threads;
  src.allow_file_links = options.allow_file_links;
  LoadStats stats;
  CARTON_ASSIGN_OR_RETURN(
      internal::AcquiredEntry entry,
      internal::AcquireEntry(root, hex, &src, options.verify_cache_hit, &stats, held));
  return FromEntry(std::move(entry), stats);
}

// A carton that lives elsewhere (a URL, a registry), known by its manifest
// hash `hex`: a hit, else a miss that `download`s the carton under the
// entry's materialize lock (so that other processes loading the same carton
// wait for this entry instead of downloading it too), loads that file and
// drops it (the entry now holds every file or links the download).
Result<LoadedCarton> LoadRemote(const std::string& hex,
                                const std::function<Status(const std::string&)>& download,
                                const LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(std::string root, CacheRoot(options));
  LoadStats stats;
  auto hit = internal::AcquireEntry(root, hex, nullptr, options.verify_cache_hit, &stats);
  if (hit.ok()) return FromEntry(std::move(hit).value(), stats);
  if (hit.status().code() != StatusCode::kNotFound) return hit.status();
  CARTON_ASSIGN_OR_RETURN(internal::FileLock lock,
                          internal::FileLock::Open(internal::MaterializeLockPath(root, hex)));
  CARTON_ASSIGN_OR_RETURN(bool locked, lock.Lock(internal::FileLock::Mode::kExclusive));
  (void)locked;
  hit = internal::AcquireEntry(root, hex, nullptr, options.verify_cache_hit, &stats);
  if (hit.ok()) return FromEntry(std::move(hit).value(), stats);
  if (hit.status().code() != StatusCode::kNotFound) return hit.status();
  std::error_code ec;
  fs::create_directories(internal::DownloadsDir(root), ec);
  std::random_device rd;
  std::string dest =
      internal::DownloadsDir(root) + "/" + hex + "-" + std::to_string(rd()) + ".carton";
  CARTON_RETURN_IF_ERROR(download(dest));
  auto loaded = LoadFile(dest, options, &lock);
  fs::remove(dest, ec);
  return loaded;
}

Result<LoadedCarton> LoadUrl(const std::string& url, const LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(std::string manifest_text, internal::ReadRemoteManifest(url));
  auto m = manifest::Manifest::Parse(AsBytes(manifest_text));
  if (!m.ok()) return m.status().WithContext(url);
  std::string hex = manifest::ToHex(manifest::Sha256Of(AsBytes(manifest_text)));
  return LoadRemote(
      hex, [&](const std::string& dest) { return internal::DownloadCarton(url, dest); }, options);
}

Result<LoadedCarton> LoadOci(const std::string& reference, const LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(std::string hex, internal::ResolveOci(reference, options));
  return LoadRemote(
      hex, [&](const std::string& dest) { return internal::PullOci(reference, dest, options); },
      options);
}

// A cache entry given by its directory (runners are handed these): its
// mapped files come from the linked source, as for any hit.
Result<LoadedCarton> LoadEntryDirectory(const std::string& dir, const LoadOptions& options) {
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
                            internal::FileLock::Open(internal::UseLockPath(root, hex)));
    CARTON_ASSIGN_OR_RETURN(bool locked, entry.use_lock.Lock(internal::FileLock::Mode::kShared));
    (void)locked;
  }
  CARTON_ASSIGN_OR_RETURN(entry.record, internal::ReadEntryRecord(abs));
  CARTON_RETURN_IF_ERROR(internal::QuickCheck(abs, entry.record));
  if (options.verify_cache_hit) {
    CARTON_ASSIGN_OR_RETURN(
        auto problems, internal::VerifyEntryDir(abs, entry.record.manifest_hash, options.threads));
    if (!problems.empty()) return Corrupt("cache entry " + abs + ": " + problems.front());
  }
  return FromEntry(std::move(entry), LoadStats{});
}

Result<LoadedCarton> LoadDirectory(const std::string& dir, const LoadOptions& options) {
  std::error_code ec;
  if (fs::exists(dir + "/" + std::string(internal::kEntryRecordName), ec)) {
    return LoadEntryDirectory(dir, options);
  }
  auto impl = std::make_shared<LoadedCarton::Impl>();
  impl->root_dir = Absolute(dir);
  auto config = ReadConfigFile(impl->root_dir);
  if (!config.ok()) {
    if (config.status().code() == StatusCode::kNotFound) {
      return NotFound(dir + ": no carton.toml (use LoadUnpacked for a bare model folder)");
    }
    return config.status();
  }
  impl->config = std::move(config).value();
  auto bytes = ReadFile(impl->root_dir + "/MANIFEST");
  if (bytes.ok()) {
    std::string hex = manifest::ToHex(manifest::Sha256Of(*bytes));
    impl->hash = manifest::ParseHex(hex);
    if (options.verify_cache_hit) {
      CARTON_ASSIGN_OR_RETURN(auto problems,
                              internal::VerifyEntryDir(impl->root_dir, hex, options.threads));
      if (!problems.empty()) return Corrupt(dir + ": " + problems.front());
    }
  }
  return Finish(std::move(impl), [](const std::string&) { return std::nullopt; });
}

}  // namespace

bool IsUrl(std::string_view s) {
  auto starts = [&](std::string_view p) {
    if (s.size() < p.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(s[i])) != p[i]) return false;
    }
    return true;
  };
  return starts("http://") || starts("https://");
}

Result<LoadedCarton> Load(const std::string& path_or_url, const LoadOptions& options) {
  if (IsUrl(path_or_url)) return LoadUrl(path_or_url, options);
  if (links::oci::IsReference(path_or_url)) return LoadOci(path_or_url, options);
  std::error_code ec;
  if (fs::is_directory(path_or_url, ec)) return LoadDirectory(path_or_url, options);
  return LoadFile(path_or_url, options);
}

Result<LoadedCarton> LoadUnpacked(const std::string& dir, const std::string& runner_name,
                                  const std::string& framework_version,
                                  std::uint64_t runner_compat_version) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": not a directory");
  auto impl = std::make_shared<LoadedCarton::Impl>();
  impl->config.runner.runner_name = runner_name;
  impl->config.runner.required_framework_version = framework_version;
  impl->config.runner.runner_compat_version = runner_compat_version;
  Status s = ValidateConfig(impl->config);
  if (!s.ok()) return InvalidArgument(s.message());
  impl->root_dir = Absolute(dir);
  impl->model_dir = impl->root_dir;
  return LoadedCarton(std::move(impl));
}

Result<CartonInfo> GetModelInfo(const std::string& path_or_url) {
  if (IsUrl(path_or_url)) return internal::ReadRemoteInfo(path_or_url);
  if (links::oci::IsReference(path_or_url)) return internal::ReadOciInfo(path_or_url);
  return ReadInfo(path_or_url);
}

}  // namespace carton::loader
