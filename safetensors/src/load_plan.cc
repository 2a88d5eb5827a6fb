#include "load_plan.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "carton/common/quote.h"
#include "carton/safetensors/sharded.h"

namespace carton::safetensors::internal {
namespace {

// Runs closer than this in a file are read together (the bytes between
// them read and dropped) rather than one read each.
constexpr std::uint64_t kMaxRunGap = 256 << 10;

std::uint64_t AlignUp(std::uint64_t n) {
  return (n + kLoadAlignment - 1) / kLoadAlignment * kLoadAlignment;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Where one tensor of the request lives.
struct Entry {
  std::uint32_t file = 0;
  TensorView view;
  std::uint64_t data_start = 0;
  std::string path;
};

// The files and indexes of a request, opened and validated; they own the
// views the catalog holds.
class Catalog {
 public:
  Catalog(const LoadOptions& options, LoadPlan* plan) : options_(options), plan_(plan) {}

  Status AddPath(const std::string& path) {
    if (EndsWith(path, ".json")) return AddIndex(path);
    CARTON_ASSIGN_OR_RETURN(auto source, Open(path));
    CARTON_ASSIGN_OR_RETURN(File file, File::OpenSource(source, options_.reader));
    files_.push_back(std::make_unique<File>(std::move(file)));
    return AddFile(*files_.back(), source, path);
  }

  const std::map<std::string_view, Entry, std::less<>>& entries() const { return entries_; }

 private:
  Result<std::shared_ptr<const RandomAccessSource>> Open(const std::string& path) {
    CARTON_ASSIGN_OR_RETURN(auto source, options_.open ? options_.open(path) : OpenPreadFile(path));
    if (source == nullptr) return Internal(path + ": the opener gave no source");
    if (auto own = std::dynamic_pointer_cast<const PreadFile>(source)) {
      std::lock_guard lock(mu_);
      plan_->own_sources.push_back(std::move(own));
    }
    return source;
  }

  Status AddFile(const File& file, std::shared_ptr<const RandomAccessSource> source,
                 const std::string& path) {
    const auto index = static_cast<std::uint32_t>(plan_->files.size());
    plan_->files.push_back(std::move(source));
    for (const TensorView& v : file.tensors()) {
      auto [it, added] = entries_.try_emplace(v.name, Entry{index, v, file.data_start(), path});
      if (!added) {
        return InvalidArgument("tensor " + QuoteForMessage(v.name) + " is in both " +
                               it->second.path + " and " + path);
      }
    }
    return Status::Ok();
  }

  Status AddIndex(const std::string& path);

  const LoadOptions& options_;
  LoadPlan* plan_;
  std::mutex mu_;
  std::vector<std::unique_ptr<File>> files_;
  std::vector<std::unique_ptr<ShardedFile>> sharded_;
  std::map<std::string_view, Entry, std::less<>> entries_;
};

Status Catalog::AddIndex(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(auto index_source, Open(path));
  if (index_source->size() > options_.reader.max_index_file_size) {
    return Corrupt(path + ": index of " + std::to_string(index_source->size()) +
                   " bytes is over the limit of " +
                   std::to_string(options_.reader.max_index_file_size));
  }
  std::string text(static_cast<std::size_t>(index_source->size()), '\0');
  CARTON_RETURN_IF_ERROR(index_source->ReadAt(
      0, MutableByteView(reinterpret_cast<std::byte*>(text.data()), text.size())));
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  // Shards open in parallel; each one's source is kept by its File's name.
  std::map<std::string, std::shared_ptr<const RandomAccessSource>> sources;
  auto open_shard = [&](const std::string& shard_name) -> Result<File> {
    CARTON_ASSIGN_OR_RETURN(auto source, Open(dir + shard_name));
    CARTON_ASSIGN_OR_RETURN(File file, File::OpenSource(source, options_.reader));
    std::lock_guard lock(mu_);
    sources[file.source()] = source;
    return file;
  };
  CARTON_ASSIGN_OR_RETURN(
      ShardedFile sharded,
      ShardedFile::FromIndex(path, text, open_shard, options_.reader, options_.threads));
  sharded_.push_back(std::make_unique<ShardedFile>(std::move(sharded)));
  const ShardedFile& set = *sharded_.back();
  for (std::size_t i = 0; i < set.shards().size(); ++i) {
    const File& shard = set.shard(i);
    CARTON_RETURN_IF_ERROR(AddFile(shard, sources.at(shard.source()), shard.source()));
  }
  return Status::Ok();
}

// Appends the pieces that read `runs` (sorted by source, destinations
// contiguous) from file `file`.
void AddPieces(std::uint32_t file, const std::vector<Run>& runs, std::size_t limit,
               LoadPlan* plan) {
  std::size_t group = 0;  // first run of the open group
  auto flush = [&](std::size_t end) {
    if (end == group) return;
    const Run& first = runs[group];
    const Run& last = runs[end - 1];
    Piece p{file,
            first.src,
            last.src + last.size - first.src,
            first.dst,
            last.dst + last.size - first.dst,
            0,
            0};
    if (end - group > 1) {
      p.first_run = static_cast<std::uint32_t>(plan->runs.size());
      p.run_count = static_cast<std::uint32_t>(end - group);
      plan->runs.insert(plan->runs.end(), runs.begin() + group, runs.begin() + end);
    }
    plan->pieces.push_back(p);
    group = end;
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    if (r.size > limit / 2) {
      flush(i);
      for (std::uint64_t done = 0; done < r.size; done += limit) {
        const std::uint64_t n = std::min<std::uint64_t>(limit, r.size - done);
        plan->pieces.push_back({file, r.src + done, n, r.dst + done, n, 0, 0});
      }
      group = i + 1;
      continue;
    }
    if (i > group) {
      const Run& prev = runs[i - 1];
      const bool close = r.src - (prev.src + prev.size) <= kMaxRunGap;
      const bool fits = r.src + r.size - runs[group].src <= limit;
      // Run indices of a piece are 32-bit.
      if (!close || !fits || plan->runs.size() + (i - group) >= UINT32_MAX) flush(i);
    }
  }
  flush(runs.size());
}

Result<SlicePlan> PlanRequest(const TensorView& view, const TensorRequest& request,
                              const std::string& path) {
  Result<SlicePlan> plan = PlanSliceOfShape(view, request.slice);
  if (!plan.ok()) return plan.status().WithContext(path);
  return plan;
}

Status AddTensor(const Entry& entry, const TensorRequest& request, std::size_t limit,
                 LoadPlan* plan) {
  CARTON_ASSIGN_OR_RETURN(SlicePlan slice, PlanRequest(entry.view, request, entry.path));
  auto runs = SliceRuns(entry.view, slice, entry.data_start + entry.view.data_offset);
  if (!runs.ok()) return runs.status().WithContext(entry.path);
  LoadedTensor t;
  t.name = request.name;
  t.dtype = entry.view.dtype;
  t.shape = slice.shape;
  t.byte_size = slice.byte_size;
  t.offset = plan->total;
  t.file = entry.path;
  for (Run& r : *runs) r.dst += t.offset;
  plan->total = AlignUp(t.offset + t.byte_size);
  plan->tensors.push_back(std::move(t));
  AddPieces(entry.file, *runs, limit, plan);
  return Status::Ok();
}

Result<std::vector<TensorRequest>> Requested(const LoadRequest& request, const Catalog& catalog) {
  if (!request.tensors) {
    std::vector<TensorRequest> all;
    for (const auto& [name, entry] : catalog.entries()) all.push_back({std::string(name), {}});
    return all;
  }
  std::map<std::string_view, int> seen;
  for (const TensorRequest& r : *request.tensors) {
    if (seen[r.name]++ > 0) {
      return InvalidArgument("tensor " + QuoteForMessage(r.name) + " is requested twice");
    }
    if (catalog.entries().find(r.name) == catalog.entries().end()) {
      std::string paths;
      for (const std::string& p : request.paths) paths += (paths.empty() ? "" : ", ") + p;
      return NotFound("no tensor named " + QuoteForMessage(r.name) + " in " + paths);
    }
  }
  return *request.tensors;
}

}  // namespace

Result<LoadPlan> PlanLoad(const LoadRequest& request, const LoadOptions& options,
                          std::size_t piece_limit) {
  if (request.paths.empty()) return InvalidArgument("load: no files given");
  LoadPlan plan;
  Catalog catalog(options, &plan);
  for (const std::string& path : request.paths) CARTON_RETURN_IF_ERROR(catalog.AddPath(path));
  CARTON_ASSIGN_OR_RETURN(std::vector<TensorRequest> wanted, Requested(request, catalog));
  for (const TensorRequest& r : wanted) {
    const Entry& entry = catalog.entries().find(r.name)->second;
    CARTON_RETURN_IF_ERROR(AddTensor(entry, r, piece_limit, &plan));
  }
  // Every tensor gets a distinct, valid address, even an empty load.
  plan.total = std::max(plan.total, kLoadAlignment);
  std::sort(plan.pieces.begin(), plan.pieces.end(), [](const Piece& a, const Piece& b) {
    return a.file != b.file ? a.file < b.file : a.src < b.src;
  });
  return plan;
}

}  // namespace carton::safetensors::internal
