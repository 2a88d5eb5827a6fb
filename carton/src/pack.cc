#include "carton/carton/pack.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <map>
#include <system_error>
#include <thread>

#include "carton/carton/writer_options.h"
#include "carton/common/atomic_file.h"
#include "carton/common/file_identity.h"
#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/format/tensor_data.h"
#include "carton/manifest/hash_files.h"
#include "carton/manifest/manifest.h"
#include "consistency.h"
#include "pack_walk.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

// Under auto, files smaller than this are stored: compressing them saves
// little, and stored metadata (carton.toml, index.toml) opens with every zip
// tool, including those without zstd.
constexpr std::uint64_t kAutoStoreBelow = 4096;

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
  if (f.size >= options.auto_store_size || f.size < kAutoStoreBelow) return Compression::kStored;
  return ZstdPays(f.full_path, f.size) ? Compression::kZstd : Compression::kStored;
}

Compression ChooseMethod(const PackOptions& options, std::string_view bytes) {
  if (options.compression != PackCompression::kAuto) {
    internal::SourceFile virtual_file{"", "", bytes.size()};
    return ChooseMethod(options, virtual_file);
  }
  if (bytes.size() < kAutoStoreBelow) return Compression::kStored;
  return ZstdPays(AsBytes(bytes)) ? Compression::kZstd : Compression::kStored;
}

// One entry to write: a file on disk, or bytes generated here.
struct Item {
  std::string path;
  const internal::SourceFile* file = nullptr;
  std::string generated;
};

// The walked files, as the consistency checks see them.
class FolderFiles : public internal::CartonFiles {
 public:
  explicit FolderFiles(const std::vector<internal::SourceFile>& files) {
    for (const auto& f : files) by_path_[f.path] = &f;
  }
  bool Present(const std::string& path) const override { return by_path_.count(path) > 0; }
  std::optional<std::uint64_t> Size(const std::string& path) const override {
    auto it = by_path_.find(path);
    if (it == by_path_.end()) return std::nullopt;
    return it->second->size;
  }
  Result<std::string> ReadText(const std::string& path, std::uint64_t limit) const override {
    auto it = by_path_.find(path);
    if (it == by_path_.end()) return NotFound(path + ": missing");
    if (it->second->size > limit) {
      return Corrupt(std::to_string(it->second->size) + " bytes is over the limit of " +
                     std::to_string(limit));
    }
    CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(it->second->full_path));
    return std::string(AsChars(bytes));
  }
  bool HasTensorFiles() const override {
    for (const auto& [path, f] : by_path_) {
      if (path.starts_with("tensor_data/") && path != "tensor_data/index.toml") return true;
    }
    return false;
  }

 private:
  std::map<std::string, const internal::SourceFile*> by_path_;
};

// One line per problem; the warnings about carton.toml come first (prefixed
// "warning: "), as a misspelled key is often the cause of a problem.
Status ProblemsStatus(const std::string& path, const std::vector<VerifyProblem>& problems,
                      const std::vector<std::string>& warnings) {
  std::string message;
  for (const auto& w : warnings) message += "warning: " + w + "\n";
  for (const auto& p : problems) {
    if (!message.empty() && message.back() != '\n') message += '\n';
    message += path + "/" + p.where + ": " + p.message;
  }
  return Corrupt(std::move(message));
}

// carton.toml and tensor_data/index.toml must be valid, and agree with the
// files, before anything is written: pack runs verify's checks
// (consistency.h), so a carton that `carton verify` would reject is never
// written. index.toml is always written, normalized (`inner = []` on every
// entry, `tensor = []` when empty), because the original implementation's
// reader requires both.
Result<std::vector<Item>> PlanItems(const std::string& path, const internal::WalkResult& walk,
                                    const PackOptions& options, PackReport* report) {
  const auto& files = walk.files;
  if (std::none_of(files.begin(), files.end(),
                   [](const internal::SourceFile& f) { return f.path.starts_with("model/"); })) {
    return Unsupported(path +
                       ": no files for model/; a carton needs the model's files (a folder of "
                       "them, a folder with a model/ directory, or a single file) and carton.toml "
                       "(or --runner and --framework-version to write one)");
  }
  std::vector<Item> items;
  for (const auto& f : files) {
    if (f.path == "carton.toml" && options.config_override) continue;
    if (f.path == "tensor_data/index.toml") continue;  // written normalized below
    items.push_back({f.path, &f, {}});
  }

  std::optional<CartonConfig> config;
  ConfigParseDetails details;
  if (options.config_override || (!walk.has_config && options.config_if_missing)) {
    config = options.config_override ? *options.config_override : *options.config_if_missing;
    CARTON_ASSIGN_OR_RETURN(std::string text, WriteConfig(*config));
    items.push_back({"carton.toml", nullptr, std::move(text)});
  } else if (walk.has_config) {
    const std::string config_path = path + "/carton.toml";
    CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(config_path));
    auto parsed = ParseConfig(AsChars(bytes), config_path, {}, &details);
    if (!parsed.ok()) return parsed.status();
    config = std::move(parsed).value();
    report->warnings = details.warnings;
  } else {
    return InvalidArgument(path +
                           ": no carton.toml; give --runner and --framework-version to describe "
                           "the model, or write one with carton init");
  }

  FolderFiles folder(files);
  std::vector<VerifyProblem> problems;
  std::optional<TensorDataIndex> index = internal::CheckTensorData(folder, {}, &problems);
  internal::CheckReferences(*config, details, index, folder, &problems);
  if (!problems.empty()) return ProblemsStatus(path, problems, report->warnings);
  items.push_back(
      {"tensor_data/index.toml", nullptr, WriteIndex(index ? *index : TensorDataIndex{})});
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.path < b.path; });
  return items;
}

}  // namespace

Result<PackReport> Pack(const std::string& path, const std::string& out_path,
                        const PackOptions& options) {
  CARTON_RETURN_IF_ERROR(CheckOutputPath(out_path, "the .carton"));
  internal::WalkOptions walk_options;
  walk_options.skip = out_path;
  walk_options.exclude = options.exclude;
  CARTON_ASSIGN_OR_RETURN(internal::WalkResult walk, internal::WalkModelPath(path, walk_options));
  PackReport report;
  report.skipped_by_default = walk.skipped_by_default;
  CARTON_ASSIGN_OR_RETURN(std::vector<Item> items, PlanItems(path, walk, options, &report));
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());

  ZipWriterOptions writer_options = CartonWriterOptions(threads, options.alignment);
  std::uint64_t total_bytes = 0, done_bytes = 0;
  for (const auto& item : items) total_bytes += item.file ? item.file->size : item.generated.size();
  if (options.progress) {
    writer_options.on_read = [&](std::uint64_t n) {
      options.progress(done_bytes += n, total_bytes);
    };
  }
  CARTON_ASSIGN_OR_RETURN(ZipWriter zip, ZipWriter::Create(out_path, writer_options));

  std::vector<manifest::ManifestEntry> entries;
  // Stored files are not read when added: Finish() reads each once as it
  // writes it, while other threads hash them (checking they hash the version
  // written); MANIFEST, written last, waits for those hashes.
  std::vector<std::size_t> unread;  // indexes into entries and report.files
  std::vector<std::string> unread_paths;
  std::vector<FileIdentity> unread_versions;
  ZipAddOptions add;
  add.sha256 = true;
  auto record = [&](const Item& item, Compression method, const ZipAddResult& r) {
    if (!r.sha256) {
      unread.push_back(entries.size());
      unread_paths.push_back(item.file->full_path);
      unread_versions.push_back(r.source_identity);
    }
    const manifest::Digest digest = r.sha256.value_or(manifest::Digest{});
    report.files.push_back({item.path, r.size, r.compressed_size, method, digest});
    entries.push_back({item.path, digest});
  };
  // Runs of small files to compress (one compression job each) are read and
  // compressed several at once; the archive takes every entry in the same
  // order as one at a time, so its bytes are the same.
  std::vector<ZipFileToAdd> small;
  std::vector<const Item*> small_items;
  auto add_small = [&]() -> Status {
    if (small.empty()) return Status::Ok();
    CARTON_ASSIGN_OR_RETURN(std::vector<ZipAddResult> added, zip.AddFiles(small, add, threads));
    for (std::size_t k = 0; k < added.size(); ++k) {
      record(*small_items[k], small[k].method, added[k]);
    }
    small.clear();
    small_items.clear();
    return Status::Ok();
  };
  // Each file's method (with auto, a trial compression of samples of it),
  // chosen for all files at once.
  std::vector<Compression> file_methods(items.size(), Compression::kStored);
  try {
    ParallelFor(items.size(), threads, [&](std::size_t i) {
      if (items[i].file != nullptr) file_methods[i] = ChooseMethod(options, *items[i].file);
    });
  } catch (const std::exception& e) {
    return Internal(std::string("choosing compression methods: ") + e.what());
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    Compression method = Compression::kStored;
    if (item.file != nullptr) {
      method = file_methods[i];
      if (method != Compression::kStored && item.file->size <= kZipBatchFileMax) {
        small.push_back({item.path, item.file->full_path, method, options.level});
        small_items.push_back(&item);
        continue;
      }
    }
    CARTON_RETURN_IF_ERROR(add_small());
    auto r = [&]() -> Result<ZipAddResult> {
      if (item.file != nullptr) {
        if (method == Compression::kStored)
          return zip.AddFileUnread(item.path, item.file->full_path);
        return zip.AddFile(item.path, item.file->full_path, method, options.level, add);
      }
      method = ChooseMethod(options, item.generated);
      return zip.AddBytes(item.path, AsBytes(item.generated), method, options.level, add);
    }();
    if (!r.ok()) return r.status();
    record(item, method, *r);
  }
  CARTON_RETURN_IF_ERROR(add_small());
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
