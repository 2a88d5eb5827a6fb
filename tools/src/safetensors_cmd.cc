// carton safetensors inspect / verify / get, for local files, http(s) URLs
// (read by range requests: the length and header, then only the bytes of
// the tensors asked for) and sharded checkpoints (an index .json, local or
// remote, whose shards are opened in parallel).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "carton/carton/reader.h"
#include "carton/common/quote.h"
#include "carton/net/http_source.h"
#include "carton/net/url.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/sharded.h"
#include "carton/safetensors/writer.h"
#include "commands.h"
#include "exit_code.h"
#include "json_out.h"

namespace carton::cli {
namespace {

using safetensors::File;
using safetensors::ShardedFile;

// Shards of a remote checkpoint opened at once (each is one or two range
// requests on a connection of its own).
constexpr unsigned kRemoteShardThreads = 8;
// Tensor bytes are copied to the output in pieces of this size (one range
// request each for a remote file).
constexpr std::uint64_t kCopyChunk = 16 << 20;

// model.safetensors.index.json, or any .json: a sharded checkpoint's index.
bool IsIndex(std::string_view s) {
  if (net::IsHttpUrl(s)) s = s.substr(0, s.find_first_of("?#"));
  return s.ends_with(".json");
}

net::HttpSourceOptions RemoteOptions() {
  net::HttpSourceOptions options;
  // The first request takes the length and, usually, the whole header.
  options.head_size = static_cast<std::uint32_t>(safetensors::kHeaderProbeSize);
  return options;
}

Result<std::shared_ptr<const RandomAccessSource>> OpenRemote(const std::string& url) {
  CARTON_ASSIGN_OR_RETURN(auto source, net::HttpRangeSource::Open(url, RemoteOptions()));
  return std::shared_ptr<const RandomAccessSource>(std::move(source));
}

Result<File> OpenFile(const std::string& path_or_url) {
  if (!net::IsHttpUrl(path_or_url)) return File::Open(path_or_url);
  CARTON_ASSIGN_OR_RETURN(auto source, OpenRemote(path_or_url));
  return File::OpenSource(std::move(source));
}

// The URL of shard `name` beside the index at `index_url`. Shard names were
// checked as relative paths without "." or ".." components; bytes outside
// the unreserved set are percent-encoded.
std::string ShardUrl(const std::string& index_url, const std::string& name) {
  std::string url = index_url.substr(0, index_url.find_first_of("?#"));
  url.erase(url.rfind('/') + 1);
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      url += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", c);
      url += escaped;
    }
  }
  return url;
}

// The whole of a remote index, in two reads at most: the first comes from
// what Open() fetched.
Result<std::string> ReadRemoteIndex(const std::string& url) {
  CARTON_ASSIGN_OR_RETURN(auto source, OpenRemote(url));
  const std::uint64_t size = source->size();
  if (size > safetensors::kMaxIndexFileSize) {
    return Corrupt(url + ": index is " + std::to_string(size) + " bytes, over the limit of " +
                   std::to_string(safetensors::kMaxIndexFileSize));
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  auto* p = reinterpret_cast<std::byte*>(text.data());
  const std::size_t first = static_cast<std::size_t>(std::min(size, safetensors::kHeaderProbeSize));
  CARTON_RETURN_IF_ERROR(source->ReadAt(0, MutableByteView(p, first)));
  if (size > first) {
    CARTON_RETURN_IF_ERROR(source->ReadAt(first, MutableByteView(p + first, text.size() - first)));
  }
  return text;
}

Result<ShardedFile> OpenSharded(const std::string& path_or_url) {
  if (!net::IsHttpUrl(path_or_url)) return ShardedFile::Open(path_or_url);
  CARTON_ASSIGN_OR_RETURN(std::string text, ReadRemoteIndex(path_or_url));
  return ShardedFile::FromIndex(
      path_or_url, text,
      [&](const std::string& shard) { return OpenFile(ShardUrl(path_or_url, shard)); }, {},
      kRemoteShardThreads);
}

// A single file or a sharded checkpoint, whichever the argument names.
using Opened = std::variant<File, ShardedFile>;

Result<Opened> OpenAny(const std::string& path_or_url) {
  if (IsIndex(path_or_url)) {
    CARTON_ASSIGN_OR_RETURN(ShardedFile f, OpenSharded(path_or_url));
    return Opened(std::move(f));
  }
  CARTON_ASSIGN_OR_RETURN(File f, OpenFile(path_or_url));
  return Opened(std::move(f));
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
}

Json TensorJson(const safetensors::TensorView& t) {
  Json e;
  e["name"] = std::string(t.name);
  e["dtype"] = std::string(safetensors::DtypeName(t.dtype));
  e["shape"] = std::vector<std::uint64_t>(t.shape.begin(), t.shape.end());
  e["bytes"] = t.byte_size();
  e["data_offsets"] = {t.data_offset, t.data_offset + t.byte_size()};
  return e;
}

std::vector<std::string> TensorRow(const safetensors::TensorView& t) {
  return {ShowText(t.name), std::string(safetensors::DtypeName(t.dtype)),
          safetensors::ShapeToString(t.shape), std::to_string(t.byte_size()),
          std::to_string(t.data_offset)};
}

Json MetadataJson(const safetensors::Metadata& metadata) {
  Json j = Json::object();
  for (const auto& [k, v] : metadata) j[k] = v;
  return j;
}

void Inspect(const File& f, bool json) {
  if (json) {
    Json j = JsonDocument();
    j["file"] = f.source();
    j["ok"] = true;
    j["header_size"] = f.header_size();
    j["data_start"] = f.data_start();
    j["file_size"] = f.file_size();
    j["metadata"] = MetadataJson(f.metadata());
    j["tensors"] = Json::array();
    for (const auto& t : f.tensors()) j["tensors"].push_back(TensorJson(t));
    PrintJson(j);
    return;
  }
  std::cout << f.source() << ": " << f.size() << " tensors, header " << f.header_size()
            << " bytes, data " << (f.file_size() - f.data_start()) << " bytes\n";
  if (f.has_metadata()) {
    std::cout << "metadata:\n";
    for (const auto& [k, v] : f.metadata()) {
      std::cout << "  " << ShowText(k) << " = " << ShowText(v) << '\n';
    }
  }
  std::vector<std::vector<std::string>> rows = {{"name", "dtype", "shape", "bytes", "offset"}};
  for (const auto& t : f.tensors()) rows.push_back(TensorRow(t));
  PrintTable(rows);
}

void Inspect(const ShardedFile& f, bool json) {
  std::uint64_t data = 0;
  for (std::size_t i = 0; i < f.shards().size(); ++i) {
    data += f.shard(i).file_size() - f.shard(i).data_start();
  }
  if (json) {
    Json j = JsonDocument();
    j["file"] = f.index_path();
    j["ok"] = true;
    j["index"] = f.index_path();
    j["metadata"] = Json::parse(f.metadata_json());
    j["shards"] = Json::array();
    for (std::size_t i = 0; i < f.shards().size(); ++i) {
      const File& s = f.shard(i);
      j["shards"].push_back({{"file", s.source()},
                             {"header_size", s.header_size()},
                             {"file_size", s.file_size()},
                             {"tensors", s.size()},
                             {"metadata", MetadataJson(s.metadata())}});
    }
    j["tensors"] = Json::array();
    for (std::string_view name : f.Names()) {
      Json e = TensorJson(*f.Find(name));
      e["shard"] = *f.ShardOf(name);
      j["tensors"].push_back(std::move(e));
    }
    PrintJson(j);
    return;
  }
  std::cout << f.index_path() << ": " << f.size() << " tensors in " << f.shards().size()
            << " shards, data " << data << " bytes\n";
  if (f.metadata_json() != "{}") std::cout << "metadata: " << f.metadata_json() << '\n';
  for (std::size_t i = 0; i < f.shards().size(); ++i) {
    std::cout << "shard " << i << ": " << f.shards()[i] << " (" << f.shard(i).size()
              << " tensors, header " << f.shard(i).header_size() << " bytes)\n";
  }
  std::vector<std::vector<std::string>> rows = {
      {"name", "dtype", "shape", "bytes", "offset", "shard"}};
  for (std::string_view name : f.Names()) {
    rows.push_back(TensorRow(*f.Find(name)));
    rows.back().push_back(std::to_string(*f.ShardOf(name)));
  }
  PrintTable(rows);
}

// The bytes of `t` from `file`, streamed in pieces: a view of the mapping
// for a local file, range reads for a remote one.
safetensors::TensorSource CopyOf(const File& file, const safetensors::TensorView& t) {
  safetensors::TensorSource s{
      std::string(t.name), t.dtype, {t.shape.begin(), t.shape.end()}, {}, {}};
  if (file.data_in_memory()) {
    s.bytes = t.data;
    return s;
  }
  s.stream = [&file, t](const safetensors::ByteSink& sink) -> Status {
    const std::uint64_t size = t.byte_size();
    std::vector<std::byte> buffer(static_cast<std::size_t>(std::min(size, kCopyChunk)));
    for (std::uint64_t done = 0; done < size;) {
      const std::size_t n = static_cast<std::size_t>(std::min(size - done, kCopyChunk));
      MutableByteView piece(buffer.data(), n);
      CARTON_RETURN_IF_ERROR(file.ReadRange(t, done, piece));
      CARTON_RETURN_IF_ERROR(sink(piece));
      done += n;
    }
    return Status::Ok();
  };
  return s;
}

// The first names of a file's tensors, for a message about a missing one.
std::string SomeNames(const Opened& opened) {
  constexpr std::size_t kMaxNames = 20;
  std::vector<std::string> names;
  if (const auto* sharded = std::get_if<ShardedFile>(&opened)) {
    for (std::string_view n : sharded->Names()) names.emplace_back(n);
  } else {
    for (const auto& t : std::get<File>(opened).tensors()) names.emplace_back(t.name);
  }
  if (names.empty()) return "no tensors";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kMaxNames; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  if (names.size() > kMaxNames) {
    out += ", and " + std::to_string(names.size() - kMaxNames) + " more";
  }
  return out;
}

}  // namespace

int SafetensorsInspect(const SafetensorsInspectArgs& args) {
  auto opened = OpenAny(args.file);
  if (!opened.ok()) return Fail("safetensors inspect", opened.status());
  std::visit([&](const auto& f) { Inspect(f, args.json); }, *opened);
  return kExitOk;
}

int SafetensorsVerify(const SafetensorsVerifyArgs& args) {
  int worst = kExitOk;
  Json report = Json::array();
  for (const auto& path : args.files) {
    auto opened = OpenAny(path);
    Json entry;
    entry["file"] = path;
    if (opened.ok()) {
      entry["ok"] = true;
      std::string what;
      if (const auto* sharded = std::get_if<ShardedFile>(&*opened)) {
        entry["tensors"] = sharded->size();
        entry["shards"] = sharded->shards().size();
        what = std::to_string(sharded->size()) + " tensors in " +
               std::to_string(sharded->shards().size()) + " shards";
      } else {
        const File& f = std::get<File>(*opened);
        entry["tensors"] = f.size();
        what = std::to_string(f.size()) + " tensors";
      }
      if (!args.json && !args.quiet) std::cout << path << ": ok (" << what << ")\n";
    } else {
      const Status& s = opened.status();
      worst = std::max(worst, ReportError("safetensors verify", s));
      entry["ok"] = false;
      entry["error"] = ErrorJson(s);
    }
    report.push_back(std::move(entry));
  }
  if (args.json) PrintJsonResults(std::move(report));
  return worst;
}

int SafetensorsGet(const SafetensorsGetArgs& args) {
  constexpr std::string_view kCommand = "safetensors get";
  auto opened = OpenAny(args.file);
  if (!opened.ok()) return Fail(kCommand, opened.status());
  std::vector<safetensors::TensorSource> tensors;
  safetensors::Metadata metadata;
  for (const auto& name : args.tensors) {
    const File* file = nullptr;
    if (const auto* sharded = std::get_if<ShardedFile>(&*opened)) {
      if (auto shard = sharded->ShardOf(name)) file = &sharded->shard(*shard);
    } else {
      file = &std::get<File>(*opened);
    }
    const safetensors::TensorView* t = file ? file->Find(name) : nullptr;
    if (t == nullptr) {
      return Fail(kCommand, NotFound(args.file + ": no tensor named \"" + name +
                                     "\" (it has: " + SomeNames(*opened) + ")"));
    }
    tensors.push_back(CopyOf(*file, *t));
    // The source file's metadata (e.g. format=pt) goes along; for tensors
    // from several shards, the first shard that sets a key wins.
    metadata.insert(file->metadata().begin(), file->metadata().end());
  }
  Status s = safetensors::WriteFile(args.output, tensors, metadata);
  if (!s.ok()) return Fail(kCommand, s);
  if (args.json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["file"] = args.file;
    j["output"] = args.output;
    j["tensors"] = args.tensors;
    PrintJson(j);
  }
  return kExitOk;
}

}  // namespace carton::cli
