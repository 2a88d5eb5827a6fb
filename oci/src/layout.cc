// The OCI config blob: writing, parsing (untrusted), and finding it for a
// carton (oci/FORMAT.md "Cartons as OCI artifacts"). The only file of oci/ that
// sees nlohmann/json for it (json.cc parses it); its exceptions stop here.
#include "layout.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "carton/carton/writer_options.h"
#include "carton/manifest/manifest.h"
#include "carton/zip/layout.h"
#include "carton/zip/writer.h"
#include "json.h"

namespace carton::oci::internal {
namespace {

using Json = nlohmann::json;

// Compressed entries up to this size are tried at every level when the
// likely ones do not give their size; larger ones only at those.
constexpr std::uint64_t kSearchAllLevelsUpTo = 16 << 20;

// The alignments tried, most likely first.
constexpr std::array<std::uint32_t, 16> kAlignments = {
    64, 4096, 1, 2, 4, 8, 16, 32, 128, 256, 512, 1024, 2048, 8192, 16384, 32768};

std::string_view KindName(OciEntryKind k) {
  switch (k) {
    case OciEntryKind::kFile:
      return "file";
    case OciEntryKind::kDirectory:
      return "directory";
    case OciEntryKind::kSymlink:
      return "symlink";
  }
  return "?";
}

// True when ZipWriter, writing the entries in this order with this
// alignment, puts every stored file's data where it is in `zip`.
bool OffsetsMatch(const ZipReader& zip, std::uint32_t alignment, std::uint64_t file_size) {
  std::uint64_t next = 0;
  for (const ZipEntry& e : zip.entries()) {
    if (e.is_dir) {
      next = PlaceZipDirectory(next, e.name.size());
      continue;
    }
    const auto method = CompressionFromZipMethod(e.method);
    if (!method) return false;
    const ZipEntryPlacement p =
        PlaceZipEntry(next, e.name.size(), *method, e.size, e.compressed_size, alignment);
    if (*method == Compression::kStored) {
      auto actual = zip.DataOffset(e.name);
      if (!actual.ok() || *actual != p.data_offset) return false;
    }
    next = p.next_header;
  }
  return next <= file_size;
}

std::vector<int> CandidateLevels(Compression method, std::optional<int> hint, bool all) {
  std::vector<int> levels;
  if (hint) levels.push_back(*hint);
  if (auto d = ResolveZipLevel(method, 0); d.ok()) levels.push_back(*d);
  if (all) {
    const int top = method == Compression::kDeflate ? 9 : kZipMaxZstdLevel;
    for (int l = 1; l <= top; ++l) levels.push_back(l);
  }
  std::vector<int> unique;
  for (int l : levels) {
    if (std::find(unique.begin(), unique.end(), l) == unique.end()) unique.push_back(l);
  }
  return unique;
}

Result<Compression> MethodOf(const ZipEntry& e) {
  auto c = CompressionFromZipMethod(e.method);
  if (!c) {
    return Unsupported(e.name + ": compression method " + std::to_string(e.method) +
                       " is not stored, deflate or zstd");
  }
  return *c;
}

// JSON access for untrusted input: every accessor checks the type.
struct Reader {
  std::string error;

  const Json* Field(const Json& obj, const char* key, const std::string& where) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (error.empty()) error = where + "." + key + " is missing";
      return nullptr;
    }
    return &*it;
  }
  std::string String(const Json& obj, const char* key, const std::string& where) {
    const Json* v = Field(obj, key, where);
    if (v == nullptr) return "";
    if (!v->is_string()) {
      if (error.empty()) error = where + "." + key + " must be a string";
      return "";
    }
    return v->get<std::string>();
  }
  std::uint64_t Unsigned(const Json& obj, const char* key, const std::string& where) {
    const Json* v = Field(obj, key, where);
    if (v == nullptr) return 0;
    if (!v->is_number_unsigned()) {
      if (error.empty()) error = where + "." + key + " must be a non-negative integer";
      return 0;
    }
    return v->get<std::uint64_t>();
  }
};

// kCorrupt: the config blob breaks a rule, `why`.
Status BadLayout(const std::string& why) { return Corrupt("carton config blob: " + why); }

// The config blob's JSON, checked to be an object of version 1.
Result<Json> ParseLayoutJson(std::string_view json) {
  if (json.size() > kMaxOciLayoutSize) {
    return Corrupt("carton config blob: " + std::to_string(json.size()) +
                   " bytes, more than the limit of " + std::to_string(kMaxOciLayoutSize));
  }
  const JsonErrorWording wording{.invalid_code = StatusCode::kCorrupt,
                                 .invalid_prefix = "carton config blob: not valid JSON: ",
                                 .too_deep_code = StatusCode::kCorrupt,
                                 .too_deep_message = "carton config blob: JSON nested too deeply"};
  CARTON_ASSIGN_OR_RETURN(Json root, ParseBoundedJson(json, kMaxArtifactJsonDepth, wording));
  if (!root.is_object()) return BadLayout("not a JSON object");
  auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer()) {
    return BadLayout("version is missing or not an integer");
  }
  if (version->get<std::int64_t>() != kOciLayoutVersion) {
    return Unsupported("carton config blob: version " +
                       std::to_string(version->get<std::int64_t>()) + " is not supported (only 1)");
  }
  return root;
}

// Reads the settings of the config's `zip` object into `layout`; returns
// its entries array, not yet read.
Result<const Json*> ReadZipSettings(const Json& zip, OciLayout* layout) {
  if (!zip.is_object()) return BadLayout("zip must be an object");
  Reader r;
  const std::uint64_t alignment = r.Unsigned(zip, "alignment", "zip");
  const std::string workers = r.String(zip, "zstd_workers", "zip");
  layout->size = r.Unsigned(zip, "size", "zip");
  const Json* entries = r.Field(zip, "entries", "zip");
  if (!r.error.empty()) return BadLayout(r.error);
  if (alignment == 0 || alignment > kZipMaxAlignment || (alignment & (alignment - 1)) != 0) {
    return BadLayout("zip.alignment " + std::to_string(alignment) +
                     " is not a power of two in 1.." + std::to_string(kZipMaxAlignment));
  }
  layout->alignment = static_cast<std::uint32_t>(alignment);
  if (workers != "frames" && workers != "multithreaded" && workers != "none") {
    return BadLayout("zip.zstd_workers must be \"frames\", \"multithreaded\" or \"none\"");
  }
  layout->zstd_multithreaded = workers != "none";
  layout->zstd_frames = workers == "frames";
  if (auto it = zip.find("layout_sha256"); it != zip.end()) {
    std::optional<manifest::Digest> d;
    if (it->is_string()) d = manifest::ParseHex(it->get<std::string>());
    if (!d) return BadLayout("zip.layout_sha256 is not 64 lowercase hex digits");
    layout->layout_sha256 = *d;
  }
  if (!entries->is_array()) return BadLayout("zip.entries must be an array");
  if (entries->size() > kZipMaxEntries) return BadLayout("zip.entries lists too many entries");
  return entries;
}

// Reads the method, compressed size and level of a file or symlink entry
// into `e`, through `r` (which may hold an error already).
Status ReadCompression(const Json& j, const std::string& where, Reader& r, OciZipEntry* e) {
  const std::string method = r.String(j, "method", where);
  e->compressed_size = r.Unsigned(j, "compressed_size", where);
  const Json* level = r.Field(j, "level", where);
  if (!r.error.empty()) return BadLayout(r.error);
  auto parsed_method = ParseCompression(method);
  if (!parsed_method.ok()) return BadLayout(where + ".method " + parsed_method.status().message());
  e->method = *parsed_method;
  if (!level->is_number_integer()) return BadLayout(where + ".level must be an integer");
  const std::int64_t l = level->get<std::int64_t>();
  if (e->method == Compression::kStored) {
    if (l != 0) return BadLayout(where + ".level must be 0 for a stored entry");
  } else if (l < -1000 || l > 1000 || !ResolveZipLevel(e->method, static_cast<int>(l)).ok() ||
             l == 0) {
    return BadLayout(where + ".level " + std::to_string(l) + " is not a level of " + method);
  }
  e->level = static_cast<int>(l);
  return Status::Ok();
}

// One item of zip.entries, `where` in messages; `names` holds the names of
// the entries before it and gets this one's.
Result<OciZipEntry> ReadEntry(const Json& j, const std::string& where,
                              std::set<std::string>* names) {
  if (!j.is_object()) return BadLayout(where + " must be an object");
  Reader r;
  OciZipEntry e;
  e.name = r.String(j, "name", where);
  const std::string kind = r.String(j, "kind", where);
  if (!r.error.empty()) return BadLayout(r.error);
  if (auto why = ZipEntryNameProblem(e.name)) {
    return BadLayout(where + ".name " + QuoteZipEntryName(e.name) + " " + *why);
  }
  if (!names->insert(e.name).second) return BadLayout(where + ": duplicate name " + e.name);
  if (kind == "directory") {
    e.kind = OciEntryKind::kDirectory;
    if (e.name.back() != '/') return BadLayout(where + ": a directory name ends with '/'");
    return e;
  }
  if (kind == "file") {
    e.kind = OciEntryKind::kFile;
  } else if (kind == "symlink") {
    e.kind = OciEntryKind::kSymlink;
    e.target = r.String(j, "target", where);
    if (r.error.empty()) {
      // A MANIFEST path, like every name these messages print.
      if (Status s = manifest::ValidateEntryPath(e.target); !s.ok()) {
        return BadLayout(where + ".target: " + s.message());
      }
    }
  } else {
    return BadLayout(where + ".kind must be \"file\", \"directory\" or \"symlink\"");
  }
  if (e.name.back() == '/') return BadLayout(where + ": a file name does not end with '/'");
  CARTON_RETURN_IF_ERROR(ReadCompression(j, where, r, &e));
  return e;
}

// Reads the config's `linked` paths into `layout`: valid MANIFEST paths,
// none of them one of the zip entries' `names`.
Status ReadLinked(const Json& linked, const std::set<std::string>& names, OciLayout* layout) {
  if (!linked.is_array()) return BadLayout("linked must be an array of paths");
  for (const Json& p : linked) {
    if (!p.is_string()) return BadLayout("linked must be an array of paths");
    layout->linked.push_back(p.get<std::string>());
    if (Status s = manifest::ValidateEntryPath(layout->linked.back()); !s.ok()) {
      return BadLayout("linked: " + s.message());
    }
    if (names.count(layout->linked.back()) != 0) {
      return BadLayout("linked file " + layout->linked.back() + " is also a zip entry");
    }
  }
  return Status::Ok();
}

// The entries of the carton `reader` reads, and its linked files, with
// what needs no search; clears `*reproducible` for what ZipWriter does not
// write (symlink and encrypted entries).
Result<OciLayout> ListEntries(const CartonReader& reader, bool* reproducible) {
  const ZipReader& zip = reader.zip();
  OciLayout layout;
  layout.manifest_hash = reader.manifest_file().hash;
  layout.size = zip.archive().size();
  for (const ZipEntry& e : zip.entries()) {
    OciZipEntry o;
    o.name = e.name;
    if (e.is_dir) {
      o.kind = OciEntryKind::kDirectory;
      layout.entries.push_back(std::move(o));
      continue;
    }
    CARTON_ASSIGN_OR_RETURN(o.method, MethodOf(e));
    o.compressed_size = e.compressed_size;
    if (e.is_symlink) {
      o.kind = OciEntryKind::kSymlink;
      CARTON_ASSIGN_OR_RETURN(o.target, reader.DataEntry(e.name));
      *reproducible = false;  // ZipWriter writes no symlink entries
    }
    if (e.encrypted) *reproducible = false;
    layout.entries.push_back(std::move(o));
  }
  for (const LinkedFile& f : reader.linked_files()) layout.linked.push_back(f.path);
  return layout;
}

// The first of kAlignments at which ZipWriter puts every stored file's data
// where it is in `zip`, or nullopt.
std::optional<std::uint32_t> FindAlignment(const ZipReader& zip, std::uint64_t file_size) {
  for (std::uint32_t a : kAlignments) {
    if (OffsetsMatch(zip, a, file_size)) return a;
  }
  return std::nullopt;
}

// What push has found out about how the zstd entries were written: through
// workers or on the calling thread, and whether files over
// kZipBatchFileMax bytes were cut into frames (only such entries tell).
struct ZstdModes {
  std::optional<bool> multithreaded;
  std::optional<bool> frames;
};

// The (multithreaded, frames) settings still possible for `e`: one for
// other methods; for zstd those `known` allows, frames tried first.
std::vector<std::pair<bool, bool>> CandidateModes(const ZipEntry& e, Compression method,
                                                  const ZstdModes& known) {
  if (method != Compression::kZstd) return {{true, false}};
  const bool large = e.size > kZipBatchFileMax;
  std::vector<std::pair<bool, bool>> modes;
  for (const auto& [mt, frames] : {std::pair{true, true}, {true, false}, {false, false}}) {
    if (known.multithreaded && *known.multithreaded != mt) continue;
    if (large && known.frames && *known.frames != frames) continue;
    if (!large && frames) continue;  // the same bytes as without frames
    modes.push_back({mt, frames});
  }
  return modes;
}

// The level at which `e` compresses to its size with `method` (`hint`
// first), or nullopt; zstd is tried in the modes `*known` still allows, and
// a zstd level found settles them.
Result<std::optional<int>> FindLevel(const ZipReader& zip, const ZipEntry& e, Compression method,
                                     std::optional<int> hint, int workers, ZstdModes* known) {
  const bool all = e.size <= kSearchAllLevelsUpTo;
  for (const auto& [mt, frames] : CandidateModes(e, method, *known)) {
    for (int level : CandidateLevels(method, hint, all)) {
      CARTON_ASSIGN_OR_RETURN(
          bool same, ZipEntryCompressesTo(zip, e, method, level, mt ? workers : 0, frames));
      if (!same) continue;
      if (method == Compression::kZstd) {
        known->multithreaded = mt;
        if (e.size > kZipBatchFileMax) known->frames = frames;
      }
      return std::optional<int>(level);
    }
  }
  return std::optional<int>();
}

// Sets the level of each compressed entry of `layout` and the zstd worker
// mode, searching while `*reproducible`; clears it when a search fails.
Status InferLevels(const ZipReader& zip, unsigned threads, OciLayout* layout, bool* reproducible) {
  // The level (and zstd worker mode) of each compressed entry: the one
  // that gives its compressed size. One pack uses one level per method, so
  // the level found last is tried first.
  const int workers = carton::CartonWriterOptions(threads).zstd_workers;
  std::optional<int> hint[3];
  ZstdModes modes;
  for (OciZipEntry& o : layout->entries) {
    if (o.kind == OciEntryKind::kDirectory || o.method == Compression::kStored) continue;
    const ZipEntry& e = *zip.Find(o.name);
    auto& h = hint[static_cast<int>(o.method)];
    std::optional<int> found;
    if (*reproducible) {
      CARTON_ASSIGN_OR_RETURN(found, FindLevel(zip, e, o.method, h, workers, &modes));
    }
    if (found) {
      h = *found;
      o.level = *found;
    } else {
      *reproducible = false;
      auto d = ResolveZipLevel(o.method, 0);
      o.level = h.value_or(d.ok() ? *d : 1);
    }
  }
  layout->zstd_multithreaded = modes.multithreaded.value_or(true);
  // Unknown (no zstd file over kZipBatchFileMax): both give these bytes, and
  // "multithreaded" is a layout older cartons can pull too.
  layout->zstd_frames = layout->zstd_multithreaded && modes.frames.value_or(false);
  return Status::Ok();
}

}  // namespace

namespace {

// The config's name for the layout's zstd mode.
const char* ZstdWorkersName(const OciLayout& layout) {
  if (!layout.zstd_multithreaded) return "none";
  return layout.zstd_frames ? "frames" : "multithreaded";
}

}  // namespace

std::string WriteOciLayout(const OciLayout& layout) {
  Json entries = Json::array();
  for (const OciZipEntry& e : layout.entries) {
    Json j = {{"name", e.name}, {"kind", std::string(KindName(e.kind))}};
    if (e.kind != OciEntryKind::kDirectory) {
      j["method"] = std::string(CompressionName(e.method));
      j["level"] = e.level;
      j["compressed_size"] = e.compressed_size;
    }
    if (e.kind == OciEntryKind::kSymlink) j["target"] = e.target;
    entries.push_back(std::move(j));
  }
  Json zip = {{"alignment", layout.alignment},
              {"zstd_workers", ZstdWorkersName(layout)},
              {"size", layout.size},
              {"entries", std::move(entries)}};
  if (layout.layout_sha256) zip["layout_sha256"] = manifest::ToHex(*layout.layout_sha256);
  Json root = {{"version", kOciLayoutVersion},
               {"manifest_hash", manifest::ToHex(layout.manifest_hash)},
               {"zip", std::move(zip)},
               {"linked", layout.linked}};
  return root.dump();
}

Result<OciLayout> ParseOciLayout(std::string_view json) {
  CARTON_ASSIGN_OR_RETURN(Json root, ParseLayoutJson(json));
  Reader r;
  OciLayout layout;
  const std::string hash = r.String(root, "manifest_hash", "config");
  const Json* zip = r.Field(root, "zip", "config");
  const Json* linked = r.Field(root, "linked", "config");
  if (!r.error.empty()) return BadLayout(r.error);
  auto parsed_hash = manifest::ParseHex(hash);
  if (!parsed_hash) return BadLayout("manifest_hash is not 64 lowercase hex digits");
  layout.manifest_hash = *parsed_hash;
  CARTON_ASSIGN_OR_RETURN(const Json* entries, ReadZipSettings(*zip, &layout));
  std::set<std::string> names;
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const std::string where = "zip.entries[" + std::to_string(i) + "]";
    CARTON_ASSIGN_OR_RETURN(OciZipEntry e, ReadEntry((*entries)[i], where, &names));
    layout.entries.push_back(std::move(e));
  }
  CARTON_RETURN_IF_ERROR(ReadLinked(*linked, names, &layout));
  return layout;
}

Result<OciLayout> InferOciLayout(const CartonReader& reader, unsigned threads) {
  const ZipReader& zip = reader.zip();
  bool reproducible = true;
  CARTON_ASSIGN_OR_RETURN(OciLayout layout, ListEntries(reader, &reproducible));
  // The alignment ZipWriter must have used, if it wrote this archive.
  std::optional<std::uint32_t> alignment;
  if (reproducible) alignment = FindAlignment(zip, zip.archive().size());
  layout.alignment = alignment.value_or(ZipWriterOptions{}.alignment);
  reproducible = reproducible && alignment.has_value();
  CARTON_RETURN_IF_ERROR(InferLevels(zip, threads, &layout, &reproducible));
  if (reproducible) {
    CARTON_ASSIGN_OR_RETURN(layout.layout_sha256, LayoutSha256(zip));
  }
  return layout;
}

Result<manifest::Digest> LayoutSha256(const ZipReader& zip) {
  const ByteView archive = zip.archive();
  if (archive.empty() && !zip.entries().empty()) {
    return InvalidArgument("the layout hash needs a mapped archive");
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const ZipEntry& e : zip.entries()) {
    if (e.is_dir || e.is_symlink || e.method != ZipMethodNumber(Compression::kStored)) continue;
    CARTON_ASSIGN_OR_RETURN(std::uint64_t offset, zip.DataOffset(e.name));
    ranges.emplace_back(offset, e.size);
  }
  std::sort(ranges.begin(), ranges.end());
  manifest::Sha256 h;
  std::array<std::byte, 16> marker;
  std::uint64_t at = 0;
  for (const auto& [offset, size] : ranges) {
    if (offset < at || !InBounds(offset, size, archive.size())) {
      return Internal("stored entries overlap in a checked archive");
    }
    h.Update(archive.subspan(at, offset - at));
    StoreLE64(marker.data(), offset);
    StoreLE64(marker.data() + 8, size);
    h.Update(marker);
    at = offset + size;
  }
  h.Update(archive.subspan(at));
  return h.Finish();
}

}  // namespace carton::oci::internal
