#include "carton/carton/pack.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <system_error>
#include <thread>

#include "carton/carton/writer_options.h"
#include "carton/common/atomic_file.h"
#include "carton/common/file_identity.h"
#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/quote.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
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

// The walked files and the extra ones, as the consistency checks see them.
class FolderFiles : public internal::CartonFiles {
 public:
  FolderFiles(const std::vector<internal::SourceFile>& files, const std::vector<PackBytes>& extra) {
    for (const auto& f : files) by_path_[f.path] = {&f, nullptr};
    for (const auto& e : extra) by_path_[e.path] = {nullptr, &e.bytes};
  }
  bool Present(const std::string& path) const override { return by_path_.count(path) > 0; }
  std::optional<std::uint64_t> Size(const std::string& path) const override {
    auto it = by_path_.find(path);
    if (it == by_path_.end()) return std::nullopt;
    return it->second.file ? it->second.file->size : it->second.bytes->size();
  }
  Result<std::string> ReadText(const std::string& path, std::uint64_t limit) const override {
    auto it = by_path_.find(path);
    if (it == by_path_.end()) return NotFound(path + ": missing");
    const std::uint64_t size = *Size(path);
    if (size > limit) {
      return Corrupt(std::to_string(size) + " bytes is over the limit of " + std::to_string(limit));
    }
    if (it->second.bytes != nullptr) return *it->second.bytes;
    CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(it->second.file->full_path));
    return std::string(AsChars(bytes));
  }
  bool HasTensorFiles() const override {
    for (const auto& [path, f] : by_path_) {
      if (path.starts_with("tensor_data/") && path != "tensor_data/index.toml") return true;
    }
    return false;
  }

 private:
  struct Source {
    const internal::SourceFile* file;
    const std::string* bytes;
  };
  std::map<std::string, Source> by_path_;
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

// Extra files go under tensor_data/ or misc/, as valid entry paths that the
// folder does not have.
Status CheckExtraFiles(const PackDescription& d, const internal::WalkResult& walk) {
  std::set<std::string_view> walked;
  for (const auto& f : walk.files) walked.insert(f.path);
  std::set<std::string_view> seen;
  for (const auto& e : d.extra_files) {
    if (!e.path.starts_with("tensor_data/") && !e.path.starts_with("misc/")) {
      return InvalidArgument(e.path +
                             ": a file added to a carton goes under tensor_data/ or misc/");
    }
    CARTON_RETURN_IF_ERROR(manifest::ValidateEntryPath(e.path));
    if (walked.count(e.path) > 0) {
      return InvalidArgument(d.path + " has " + e.path + " already; the file given for it would " +
                             "replace it (leave one of them out)");
    }
    if (!seen.insert(e.path).second) return InvalidArgument(e.path + ": given twice");
  }
  return Status::Ok();
}

// carton.toml's config: the description's, or the folder's file (parsed,
// its warnings into `report`). Sets `generated` when carton.toml is written
// from the description.
Result<CartonConfig> ChooseConfig(const PackDescription& d, const internal::WalkResult& walk,
                                  ConfigParseDetails* details, bool* generated,
                                  PackReport* report) {
  *generated = d.config && (d.config_use == PackConfigUse::kReplace || !walk.has_config);
  if (*generated) return *d.config;
  if (!walk.has_config) {
    return InvalidArgument(d.path +
                           ": no carton.toml; give --runner and --framework-version to describe "
                           "the model, or write one with carton init");
  }
  const std::string config_path = d.path + "/carton.toml";
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(config_path));
  auto parsed = ParseConfig(AsChars(bytes), config_path, {}, details);
  if (!parsed.ok()) return parsed.status();
  report->warnings = details->warnings;
  CartonConfig config = std::move(parsed).value();
  if (d.edit_config) {
    CARTON_RETURN_IF_ERROR(d.edit_config(&config));
    *generated = true;
  }
  return config;
}

// Where a single file goes: model/<its name>, but for the TorchScript
// runner, which loads model/model.pt unless [runner.opts] model_path names
// another file: a single .pt is packed as model/model.pt, as the original
// implementation packs it, so the carton runs.
std::string SingleFilePath(const internal::WalkResult& walk, const CartonConfig& config,
                           const std::string& path) {
  if (!walk.single_file || config.runner.runner_name != "torchscript" ||
      config.runner.opts.count("model_path") > 0) {
    return path;
  }
  return "model/model.pt";
}

// The tensors of one added self-test, renamed as its entries will be
// ("self_test_<n>_input_<name>"), with the refs carton.toml gives them.
TensorData RenameSelfTestTensors(const PackSelfTest& t, const std::string& prefix,
                                 SelfTest* entry) {
  TensorData out;
  auto add = [&](const TensorData& data, const std::string& kind, TensorRefs* refs) {
    for (const TensorValue& v : data.tensors) {
      TensorValue renamed = v;
      renamed.name = prefix + kind + "_" + v.name;
      (*refs)[v.name] = "@tensor_data/" + renamed.name;
      out.tensors.push_back(std::move(renamed));
    }
  };
  add(t.inputs, "input", &entry->inputs);
  if (t.expected_out) add(*t.expected_out, "output", &entry->expected_out.emplace());
  return out;
}

// Adds the description's self-tests: their tensors to `index` and, as
// files, to `added`; a [[self_test]] for each to `config`. Each gets the
// first number n (from its place among the self-tests) whose names and
// files the folder does not use.
Status AddSelfTests(const PackDescription& d, const internal::CartonFiles& folder,
                    TensorDataIndex* index, CartonConfig* config, std::vector<PackBytes>* added) {
  for (const PackSelfTest& t : d.self_tests) {
    for (std::size_t n = config->self_tests.size() + 1;; ++n) {
      const std::string prefix = "self_test_" + std::to_string(n) + "_";
      SelfTest entry;
      entry.name = t.name;
      entry.description = t.description;
      auto encoded_files = EncodeTensorData(RenameSelfTestTensors(t, prefix, &entry));
      if (!encoded_files.ok()) {
        return encoded_files.status().WithContext(
            "self-test " + std::to_string(config->self_tests.size() + 1) + " added to " + d.path);
      }
      std::vector<TensorDataFile> files = std::move(encoded_files).value();
      CARTON_ASSIGN_OR_RETURN(TensorDataIndex encoded, ParseIndex(files.back().bytes));
      files.pop_back();  // index.toml: its entries join `index`
      const std::string dir = "self_test_" + std::to_string(n) + "/";
      bool taken = false;
      for (TensorDataEntry& e : encoded.tensors) {
        e.file = dir + e.file;
        taken |= index->Find(e.name) != nullptr || folder.Present("tensor_data/" + e.file);
      }
      if (taken) continue;
      for (std::size_t i = 0; i < files.size(); ++i) {
        added->push_back({"tensor_data/" + encoded.tensors[i].file, std::move(files[i].bytes)});
      }
      for (TensorDataEntry& e : encoded.tensors) index->tensors.push_back(std::move(e));
      config->self_tests.push_back(std::move(entry));
      break;
    }
  }
  return Status::Ok();
}

// The entries to write: the walked files (carton.toml unless generated,
// index.toml never), the extra and added files, carton.toml when
// generated and index.toml, normalized, sorted by path.
Result<std::vector<Item>> ListItems(const PackDescription& d, const internal::WalkResult& walk,
                                    const CartonConfig& config, bool generated_config,
                                    const TensorDataIndex& index,
                                    const std::vector<PackBytes>& added) {
  std::vector<Item> items;
  for (const auto& f : walk.files) {
    if (f.path == "carton.toml" && generated_config) continue;
    if (f.path == "tensor_data/index.toml") continue;  // written normalized below
    items.push_back({SingleFilePath(walk, config, f.path), &f, {}});
  }
  for (const auto& e : d.extra_files) {
    if (e.path != "tensor_data/index.toml") items.push_back({e.path, nullptr, e.bytes});
  }
  for (const auto& e : added) items.push_back({e.path, nullptr, e.bytes});
  if (generated_config) {
    CARTON_ASSIGN_OR_RETURN(std::string text, WriteConfig(config));
    items.push_back({"carton.toml", nullptr, std::move(text)});
  }
  items.push_back({"tensor_data/index.toml", nullptr, WriteIndex(index)});
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.path < b.path; });
  return items;
}

// carton.toml and tensor_data/index.toml must be valid, and agree with the
// files, before anything is written: pack runs verify's checks
// (consistency.h), so a carton that `carton verify` would reject is never
// written. index.toml is always written, normalized (`inner = []` on every
// entry, `tensor = []` when empty), because the original implementation's
// reader requires both.
Result<std::vector<Item>> PlanItems(const PackDescription& d, const internal::WalkResult& walk,
                                    PackReport* report) {
  const auto& files = walk.files;
  if (std::none_of(files.begin(), files.end(),
                   [](const internal::SourceFile& f) { return f.path.starts_with("model/"); })) {
    return Unsupported(d.path +
                       ": no files for model/; a carton needs the model's files (a folder of "
                       "them, a folder with a model/ directory, or a single file) and carton.toml "
                       "(or --runner and --framework-version to write one)");
  }
  CARTON_RETURN_IF_ERROR(CheckExtraFiles(d, walk));
  ConfigParseDetails details;
  bool generated_config = false;
  CARTON_ASSIGN_OR_RETURN(CartonConfig config,
                          ChooseConfig(d, walk, &details, &generated_config, report));
  FolderFiles folder(files, d.extra_files);
  std::vector<VerifyProblem> problems;
  std::optional<TensorDataIndex> index = internal::CheckTensorData(folder, {}, &problems);
  std::vector<PackBytes> added;
  if (!d.self_tests.empty() && problems.empty()) {
    if (!index) index.emplace();
    CARTON_RETURN_IF_ERROR(AddSelfTests(d, folder, &*index, &config, &added));
    generated_config = true;
  }
  internal::CheckReferences(config, details, index, folder, &problems);
  if (!problems.empty()) return ProblemsStatus(d.path, problems, report->warnings);
  return ListItems(d, walk, config, generated_config, index ? *index : TensorDataIndex{}, added);
}

// Takes the files whose sha256 the description links out of `items` (into
// `linked`, for MANIFEST) and appends LINKS, so it is written after every
// file, as shrink writes it. Files are hashed here once more than a pack
// without links hashes them.
Status SplitLinked(const PackDescription& d, unsigned threads, std::vector<Item>* items,
                   std::vector<manifest::ManifestEntry>* linked) {
  std::vector<std::string> paths;
  std::vector<std::size_t> on_disk;
  for (std::size_t i = 0; i < items->size(); ++i) {
    if ((*items)[i].file != nullptr) {
      paths.push_back((*items)[i].file->full_path);
      on_disk.push_back(i);
    }
  }
  CARTON_ASSIGN_OR_RETURN(std::vector<manifest::Digest> disk_digests,
                          manifest::HashFiles(paths, threads));
  std::vector<manifest::Digest> digests(items->size());
  for (std::size_t k = 0; k < on_disk.size(); ++k) digests[on_disk[k]] = disk_digests[k];
  std::vector<Item> kept;
  std::set<manifest::Digest> used;
  for (std::size_t i = 0; i < items->size(); ++i) {
    Item& item = (*items)[i];
    if (item.file == nullptr) digests[i] = manifest::Sha256Of(AsBytes(item.generated));
    const bool can_leave = item.path != "carton.toml" && item.path != "tensor_data/index.toml";
    if (can_leave && d.links.count(digests[i]) > 0) {
      linked->push_back({item.path, digests[i]});
      used.insert(digests[i]);
    } else {
      kept.push_back(std::move(item));
    }
  }
  for (const auto& [digest, urls] : d.links) {
    if (used.count(digest) == 0) {
      return InvalidArgument("linked file sha256 " + manifest::ToHex(digest) +
                             " names no file of " + d.path +
                             " that can leave the zip (carton.toml and index.toml stay in)");
    }
  }
  links::Links links{d.links};
  std::string text = links::WriteLinks(links);
  // ParseLinks holds every LINKS rule (WriteLinks escapes any text).
  if (auto parsed = links::ParseLinks(text); !parsed.ok()) {
    return InvalidArgument("LINKS cannot hold these urls: " + parsed.status().message());
  }
  kept.push_back({"LINKS", nullptr, std::move(text)});
  *items = std::move(kept);
  return Status::Ok();
}

// Each file's method (with auto, a trial compression of samples of it),
// chosen for all files at once.
Result<std::vector<Compression>> ChooseMethods(const std::vector<Item>& items,
                                               const PackOptions& options, unsigned threads) {
  std::vector<Compression> methods(items.size(), Compression::kStored);
  try {
    ParallelFor(items.size(), threads, [&](std::size_t i) {
      if (items[i].file != nullptr) methods[i] = ChooseMethod(options, *items[i].file);
    });
  } catch (const std::exception& e) {
    return Internal(std::string("choosing compression methods: ") + e.what());
  }
  return methods;
}

// Whether an item's file is hashed by the hashing threads rather than in
// the pass that writes it: stored files (not read until Finish() copies
// them) and files compressed one at a time (a single stream of SHA-256
// would bound the compression to one core's hashing speed). Runs of small
// files to compress are hashed as they are read, several at once.
bool HashedApart(const Item& item, Compression method) {
  return item.file != nullptr &&
         (method == Compression::kStored || item.file->size > kZipBatchFileMax);
}

// The files HashedApart, hashed on threads of their own from before the
// first entry is written until MANIFEST is produced: each file must be the
// version seen here when it is hashed and when it is written.
class ApartHashes {
 public:
  static Result<std::shared_ptr<ApartHashes>> Start(const std::vector<Item>& items,
                                                    const std::vector<Compression>& methods,
                                                    unsigned threads) {
    auto h = std::make_shared<ApartHashes>();
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!HashedApart(items[i], methods[i])) continue;
      CARTON_ASSIGN_OR_RETURN(FileIdentity identity, IdentityOfPath(items[i].file->full_path));
      h->paths_.push_back(items[i].file->full_path);
      h->versions_.push_back(identity);
    }
    if (h->paths_.empty()) return h;
    // The thread is joined by Join() or the destructor; it holds no
    // reference of its own, so the last one is never dropped on it.
    auto run = [h = h.get(), threads] {
      try {
        h->digests_ = manifest::HashFiles(h->paths_, threads, h->versions_);
      } catch (const std::exception& e) {
        h->digests_ = Internal(std::string("hashing files: ") + e.what());
      }
    };
    try {
      h->thread_ = std::jthread(run);
    } catch (const std::system_error&) {
      run();  // no thread to spare: hash before writing
    }
    return h;
  }

  // The digests, in the order of the items; `written` are the versions the
  // writer read, which must be those hashed.
  Result<std::vector<manifest::Digest>> Finish(const std::vector<FileIdentity>& written) {
    Join();
    if (!digests_.ok()) return digests_.status();
    for (std::size_t k = 0; k < written.size() && k < versions_.size(); ++k) {
      if (written[k] != versions_[k]) {
        return IoError(paths_[k] + ": changed while the carton was written");
      }
    }
    return *digests_;
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::vector<std::string> paths_;
  std::vector<FileIdentity> versions_;
  Result<std::vector<manifest::Digest>> digests_ = std::vector<manifest::Digest>();
  std::jthread thread_;
};

// Writes every item into `zip` in order; fills `entries` (MANIFEST's lines)
// and report->files. The files HashedApart are hashed by ApartHashes (the
// `apart` lists: which entries, and the versions written); stored files are
// not read when added: Finish() reads each once as it writes it.
class ItemWriter {
 public:
  ItemWriter(ZipWriter* zip, const PackOptions& options, unsigned threads, PackReport* report,
             std::vector<manifest::ManifestEntry>* entries)
      : zip_(*zip), options_(options), threads_(threads), report_(*report), entries_(*entries) {
    add_.sha256 = true;
  }

  Status WriteAll(const std::vector<Item>& items, const std::vector<Compression>& methods) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Item& item = items[i];
      Compression method = Compression::kStored;
      if (item.file != nullptr) {
        method = methods[i];
        // Runs of small files to compress (one compression job each) are
        // read and compressed several at once; the archive takes every
        // entry in the same order as one at a time, so its bytes are the
        // same.
        if (!HashedApart(item, method)) {
          small_.push_back({item.path, item.file->full_path, method, options_.level});
          small_items_.push_back(&item);
          continue;
        }
      }
      CARTON_RETURN_IF_ERROR(FlushSmall());
      CARTON_RETURN_IF_ERROR(WriteOne(item, method));
    }
    return FlushSmall();
  }

  std::vector<std::size_t> apart;
  std::vector<FileIdentity> apart_versions;

 private:
  Status WriteOne(const Item& item, Compression method) {
    Result<ZipAddResult> r = Status::Ok();
    if (item.file != nullptr) {
      r = method == Compression::kStored
              ? zip_.AddFileUnread(item.path, item.file->full_path)
              : zip_.AddFile(item.path, item.file->full_path, method, options_.level);
    } else {
      // LINKS is stored, as shrink writes it, so any zip tool reads it.
      method = item.path == "LINKS" ? Compression::kStored : ChooseMethod(options_, item.generated);
      r = zip_.AddBytes(item.path, AsBytes(item.generated), method, options_.level, add_);
    }
    if (!r.ok()) return r.status();
    Record(item, method, *r);
    return Status::Ok();
  }

  Status FlushSmall() {
    if (small_.empty()) return Status::Ok();
    CARTON_ASSIGN_OR_RETURN(std::vector<ZipAddResult> added, zip_.AddFiles(small_, add_, threads_));
    for (std::size_t k = 0; k < added.size(); ++k)
      Record(*small_items_[k], small_[k].method, added[k]);
    small_.clear();
    small_items_.clear();
    return Status::Ok();
  }

  void Record(const Item& item, Compression method, const ZipAddResult& r) {
    // LINKS is not a file of MANIFEST, nor of the report.
    if (item.path == "LINKS") return;
    if (!r.sha256) {
      apart.push_back(entries_.size());
      apart_versions.push_back(r.source_identity);
    }
    const manifest::Digest digest = r.sha256.value_or(manifest::Digest{});
    report_.files.push_back({item.path, r.size, r.compressed_size, method, digest});
    entries_.push_back({item.path, digest});
  }

  ZipWriter& zip_;
  const PackOptions& options_;
  const unsigned threads_;
  PackReport& report_;
  std::vector<manifest::ManifestEntry>& entries_;
  ZipAddOptions add_;
  std::vector<ZipFileToAdd> small_;
  std::vector<const Item*> small_items_;
};

// Adds MANIFEST last: its size is known now (every line has the same length
// whatever the digest), its bytes once the files hashed apart are hashed,
// which goes on while the archive is written.
// `linked` are the files LINKS covers, which MANIFEST lists too.
Status AddManifest(ZipWriter* zip, ItemWriter* writer, std::shared_ptr<ApartHashes> hashes,
                   std::vector<manifest::ManifestEntry>* entries,
                   const std::vector<manifest::ManifestEntry>& linked, PackReport* report) {
  auto all_entries = [entries, linked] {
    std::vector<manifest::ManifestEntry> all = *entries;
    all.insert(all.end(), linked.begin(), linked.end());
    return all;
  };
  CARTON_ASSIGN_OR_RETURN(manifest::Manifest sized, manifest::Manifest::FromEntries(all_entries()));
  const std::uint64_t manifest_size = sized.Serialize().size();
  auto produce_manifest = [=]() -> Result<std::string> {
    CARTON_ASSIGN_OR_RETURN(std::vector<manifest::Digest> digests,
                            hashes->Finish(writer->apart_versions));
    if (digests.size() != writer->apart.size()) {
      return Internal("pack: " + std::to_string(digests.size()) + " files hashed apart, not " +
                      std::to_string(writer->apart.size()));
    }
    for (std::size_t k = 0; k < writer->apart.size(); ++k) {
      (*entries)[writer->apart[k]].sha256 = digests[k];
      report->files[writer->apart[k]].sha256 = digests[k];
    }
    CARTON_ASSIGN_OR_RETURN(manifest::Manifest m, manifest::Manifest::FromEntries(all_entries()));
    report->manifest_hash = m.Hash();
    return m.Serialize();
  };
  // MANIFEST is stored, as the original implementation does, so readers can
  // take it without a decoder.
  CARTON_RETURN_IF_ERROR(zip->AddLater("MANIFEST", manifest_size, produce_manifest).status());
  return zip->Finish();
}

}  // namespace

Result<PackCompression> ParsePackCompression(std::string_view name) {
  if (name == "auto") return PackCompression::kAuto;
  auto method = ParseCompression(name);
  if (!method.ok()) {
    return InvalidArgument("must be stored, deflate, zstd or auto, not " + QuoteForMessage(name));
  }
  switch (*method) {
    case Compression::kStored:
      return PackCompression::kStored;
    case Compression::kDeflate:
      return PackCompression::kDeflate;
    case Compression::kZstd:
      break;
  }
  return PackCompression::kZstd;
}

Result<PackReport> Pack(const PackDescription& d, const std::string& out_path) {
  const PackOptions& options = d.options;
  CARTON_RETURN_IF_ERROR(CheckOutputPath(out_path, "the .carton"));
  internal::WalkOptions walk_options;
  walk_options.skip = out_path;
  walk_options.exclude = options.exclude;
  CARTON_ASSIGN_OR_RETURN(internal::WalkResult walk, internal::WalkModelPath(d.path, walk_options));
  PackReport report;
  report.skipped_by_default = walk.skipped_by_default;
  CARTON_ASSIGN_OR_RETURN(std::vector<Item> items, PlanItems(d, walk, &report));
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<manifest::ManifestEntry> linked;
  if (!d.links.empty()) CARTON_RETURN_IF_ERROR(SplitLinked(d, threads, &items, &linked));

  ZipWriterOptions writer_options = CartonWriterOptions(threads, options.alignment);
  std::uint64_t total_bytes = 0, done_bytes = 0;
  for (const auto& item : items) total_bytes += item.file ? item.file->size : item.generated.size();
  if (options.progress) {
    writer_options.on_read = [&](std::uint64_t n) {
      options.progress(done_bytes += n, total_bytes);
    };
  }
  CARTON_ASSIGN_OR_RETURN(std::vector<Compression> methods, ChooseMethods(items, options, threads));
  CARTON_ASSIGN_OR_RETURN(ZipWriter zip, ZipWriter::Create(out_path, writer_options));
  // Hashing goes on while entries are written; every return below joins it.
  CARTON_ASSIGN_OR_RETURN(std::shared_ptr<ApartHashes> hashes,
                          ApartHashes::Start(items, methods, threads));
  std::vector<manifest::ManifestEntry> entries;
  ItemWriter writer(&zip, options, threads, &report, &entries);
  Status written = writer.WriteAll(items, methods);
  if (written.ok()) written = AddManifest(&zip, &writer, hashes, &entries, linked, &report);
  hashes->Join();
  CARTON_RETURN_IF_ERROR(written);
  return report;
}

Result<PackReport> Pack(const std::string& path, const std::string& out_path,
                        const PackOptions& options) {
  PackDescription d;
  d.path = path;
  d.options = options;
  return Pack(d, out_path);
}

}  // namespace carton
