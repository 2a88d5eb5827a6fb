#include "carton/safetensors/sharded.h"

#include <algorithm>
#include <utility>

#include "carton/common/mapped_file.h"
#include "carton/common/parallel.h"
#include "carton/common/quote.h"
#include "sharded_index.h"

namespace carton::safetensors {
namespace {

// Shard names come from an untrusted index and are joined to the index's
// directory, so they must not be able to name a file outside it (no
// absolute paths, no ".."), nor spell one shard two ways ("a" and "./a"),
// which would defeat the one-shard-per-tensor check.
Status CheckShardName(std::string_view tensor, std::string_view shard) {
  auto bad = [&](std::string_view why) {
    return Corrupt("weight_map: tensor " + QuoteForMessage(tensor) + ": shard name " +
                   QuoteForMessage(shard) + " " + std::string(why));
  };
  if (shard.empty()) return bad("is empty");
  if (shard.front() == '/') return bad("is an absolute path");
  if (shard.find('\\') != std::string_view::npos) return bad("contains a backslash");
  if (shard.find('\0') != std::string_view::npos) return bad("contains a NUL byte");
  std::size_t start = 0;
  for (;;) {
    std::size_t end = shard.find('/', start);
    std::string_view part = shard.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty()) return bad("has an empty path component");
    if (part == ".") return bad("has a \".\" path component");
    if (part == "..") return bad("has a \"..\" path component");
    if (end == std::string_view::npos) return Status::Ok();
    start = end + 1;
  }
}

// "dir/" for "dir/model.safetensors.index.json", "" for a bare file name.
std::string DirectoryOf(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

struct ShardedFile::Impl {
  struct Entry {
    TensorView view;
    std::uint32_t shard;  // index into shard_paths and files
  };

  std::string index_path;
  std::string metadata_json;
  std::optional<std::uint64_t> total_size;
  std::vector<std::string> shard_names;  // as written in weight_map, sorted
  std::vector<std::string> shard_paths;  // parallel to shard_names
  std::vector<File> files;               // parallel to shard_names
  std::vector<Entry> entries;            // sorted by tensor name, unique

  const Entry* FindEntry(std::string_view name) const;
  Status OpenShards(const internal::ShardIndex& index, const ShardOpener& open_shard,
                    unsigned threads);
  Status BuildEntries();
  Status MatchWeightMap(const internal::ShardIndex& index) const;
};

const ShardedFile::Impl::Entry* ShardedFile::Impl::FindEntry(std::string_view name) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const Entry& e, std::string_view n) { return e.view.name < n; });
  if (it == entries.end() || it->view.name != name) return nullptr;
  return &*it;
}

Status ShardedFile::Impl::OpenShards(const internal::ShardIndex& index,
                                     const ShardOpener& open_shard, unsigned threads) {
  for (const auto& [tensor, shard] : index.weight_map) {
    CARTON_RETURN_IF_ERROR(CheckShardName(tensor, shard));
    shard_names.push_back(shard);
  }
  std::sort(shard_names.begin(), shard_names.end());
  shard_names.erase(std::unique(shard_names.begin(), shard_names.end()), shard_names.end());
  std::vector<std::optional<Result<File>>> opened(shard_names.size());
  ParallelFor(shard_names.size(), threads,
              [&](std::size_t i) { opened[i].emplace(open_shard(shard_names[i])); });
  files.reserve(shard_names.size());
  for (auto& result : opened) {
    if (!result->ok()) return result->status();
    files.push_back(std::move(*result).value());
    shard_paths.push_back(files.back().source());
  }
  return Status::Ok();
}

Status ShardedFile::Impl::BuildEntries() {
  for (std::uint32_t i = 0; i < files.size(); ++i) {
    for (const TensorView& v : files[i].tensors()) entries.push_back({v, i});
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.view.name < b.view.name; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].view.name == entries[i - 1].view.name) {
      return Corrupt(
          "tensor " + QuoteForMessage(entries[i].view.name) +
          " appears in two shards: " + QuoteForMessage(shard_names[entries[i - 1].shard]) +
          " and " + QuoteForMessage(shard_names[entries[i].shard]));
    }
  }
  return Status::Ok();
}

// Both lists are sorted by tensor name with unique names, so one merge pass
// finds every disagreement; the first, in name order, is reported.
Status ShardedFile::Impl::MatchWeightMap(const internal::ShardIndex& index) const {
  const auto& wm = index.weight_map;
  std::size_t w = 0, e = 0;
  while (w < wm.size() || e < entries.size()) {
    if (e == entries.size() || (w < wm.size() && wm[w].first < entries[e].view.name)) {
      return Corrupt("tensor " + QuoteForMessage(wm[w].first) + " mapped to shard " +
                     QuoteForMessage(wm[w].second) + " is not in it");
    }
    const Entry& entry = entries[e];
    const std::string& found_in = shard_names[entry.shard];
    if (w == wm.size() || entry.view.name < wm[w].first) {
      return Corrupt("tensor " + QuoteForMessage(entry.view.name) + " in shard " +
                     QuoteForMessage(found_in) + " is not in weight_map");
    }
    if (wm[w].second != found_in) {
      return Corrupt("tensor " + QuoteForMessage(wm[w].first) + " mapped to shard " +
                     QuoteForMessage(wm[w].second) + " is not in it (it is in " +
                     QuoteForMessage(found_in) + ")");
    }
    ++w;
    ++e;
  }
  return Status::Ok();
}

Result<ShardedFile> ShardedFile::Open(const std::string& index_json_path,
                                      const ReaderOptions& options) {
  CARTON_ASSIGN_OR_RETURN(MappedFile text, MappedFile::Open(index_json_path));
  const std::string dir = DirectoryOf(index_json_path);
  return FromIndex(
      index_json_path, AsChars(text.bytes()),
      [&](const std::string& shard) { return File::Open(dir + shard, options); }, options);
}

Result<ShardedFile> ShardedFile::FromIndex(const std::string& index_name,
                                           std::string_view index_json,
                                           const ShardOpener& open_shard,
                                           const ReaderOptions& options, unsigned threads) {
  if (index_json.size() > options.max_index_file_size) {
    return Corrupt(index_name + ": index is " + std::to_string(index_json.size()) +
                   " bytes, over the limit of " + std::to_string(options.max_index_file_size));
  }
  auto parsed = internal::ParseShardIndex(index_json, options.max_json_depth);
  if (!parsed.ok()) return parsed.status().WithContext(index_name);
  const internal::ShardIndex& index = *parsed;

  auto impl = std::make_unique<Impl>();
  impl->index_path = index_name;
  impl->metadata_json = index.metadata_json;
  impl->total_size = index.total_size;
  Status s = impl->OpenShards(index, open_shard, threads);
  if (s.ok()) s = impl->BuildEntries();
  if (s.ok()) s = impl->MatchWeightMap(index);
  if (!s.ok()) return s.WithContext(index_name);
  return ShardedFile(std::move(impl));
}

ShardedFile::ShardedFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShardedFile::ShardedFile(ShardedFile&&) noexcept = default;
ShardedFile& ShardedFile::operator=(ShardedFile&&) noexcept = default;
ShardedFile::~ShardedFile() = default;

std::size_t ShardedFile::size() const { return impl_->entries.size(); }

std::vector<std::string_view> ShardedFile::Names() const {
  std::vector<std::string_view> names;
  names.reserve(impl_->entries.size());
  for (const auto& e : impl_->entries) names.push_back(e.view.name);
  return names;
}

const TensorView* ShardedFile::Find(std::string_view name) const {
  const Impl::Entry* e = impl_->FindEntry(name);
  return e == nullptr ? nullptr : &e->view;
}

Result<TensorView> ShardedFile::Get(std::string_view name) const {
  const TensorView* v = Find(name);
  if (v == nullptr) {
    return NotFound(impl_->index_path + ": no tensor named " + QuoteForMessage(name));
  }
  return *v;
}

std::span<const std::string> ShardedFile::shards() const { return impl_->shard_paths; }

std::optional<std::size_t> ShardedFile::ShardOf(std::string_view name) const {
  const Impl::Entry* e = impl_->FindEntry(name);
  if (e == nullptr) return std::nullopt;
  return e->shard;
}

const File& ShardedFile::shard(std::size_t i) const { return impl_->files[i]; }
const std::string& ShardedFile::metadata_json() const { return impl_->metadata_json; }
std::optional<std::uint64_t> ShardedFile::total_size() const { return impl_->total_size; }
const std::string& ShardedFile::index_path() const { return impl_->index_path; }

}  // namespace carton::safetensors
