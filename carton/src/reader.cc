// CartonReader (reader.h): opening a carton, MANIFEST, LINKS and the entry
// rules, once each.
#include "carton/carton/reader.h"

#include <set>
#include <utility>

#include "carton/carton/symlink.h"
#include "carton/common/atomic_file.h"
#include "carton/links/blob_cache.h"
#include "carton/manifest/sha256.h"

namespace carton {

Status CartonProblem::ToStatus() const { return Status(code, where + ": " + message); }

std::string StrayLinksHash(const manifest::Digest& digest) {
  return "sha256 " + manifest::ToHex(digest) +
         " names no file in MANIFEST (every LINKS hash must be a MANIFEST file's)";
}

Result<std::string> ResolveLinkedFile(const LinkedFile& file, const Environment& environment,
                                      bool rehash, const ProgressFn& progress) {
  CARTON_ASSIGN_OR_RETURN(std::string root, environment.CacheRoot());
  links::BlobCache cache(root);
  if (rehash) {
    auto hit = cache.Get(file.sha256);
    // A blob that fails its rehash has been discarded: fetch it again.
    if (hit.ok() && cache.Verify(file.sha256).ok()) return hit;
  }
  net::FetchOptions fetch = environment.network;
  fetch.progress_label = file.path;
  if (progress) fetch.progress = progress;
  return cache.Fetch(file.sha256, file.urls, 0, fetch);
}

CartonReader::CartonReader(std::string location, ZipReader zip, const CartonLimits& limits)
    : location_(std::move(location)), zip_(std::move(zip)), limits_(limits) {}

CartonReader::CartonReader(CartonReader&&) noexcept = default;
CartonReader& CartonReader::operator=(CartonReader&&) noexcept = default;
CartonReader::~CartonReader() = default;

namespace {

// `s` with a leading `from` (a downloaded copy's path) replaced by `to` (the
// carton as the user named it), so messages name what the user gave.
Status Renamed(const Status& s, const std::string& from, const std::string& to) {
  const std::string& message = s.message();
  if (message.rfind(from, 0) != 0) return s;
  return Status(s.code(), to + message.substr(from.size()), s.detail());
}

}  // namespace

Result<CartonReader> CartonReader::OpenSource(std::unique_ptr<RandomAccessSource> source,
                                              const CartonLimits& limits) {
  std::string name = source->name();
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::OpenSource(std::move(source), limits.zip));
  return CartonReader(std::move(name), std::move(zip), limits);
}

Result<CartonReader> CartonReader::OpenFile(std::shared_ptr<const MappedFile> file,
                                            const CartonLimits& limits,
                                            std::shared_ptr<const ManifestFile> manifest,
                                            std::string location) {
  const std::string path = file->path();
  if (location.empty()) location = path;
  auto zip = ZipReader::OpenFile(std::move(file), limits.zip);
  if (!zip.ok()) return Renamed(zip.status(), path, location);
  CartonReader reader(std::move(location), std::move(zip).value(), limits);
  if (manifest != nullptr) {
    reader.manifest_ = std::move(manifest);
    reader.manifest_status_ = Status::Ok();
  }
  return reader;
}

const std::string& CartonReader::location() const { return location_; }
const ZipReader& CartonReader::zip() const { return zip_; }
const CartonLimits& CartonReader::limits() const { return limits_; }

Result<std::string> CartonReader::ReadText(std::string_view name, std::uint64_t limit) const {
  const ZipEntry* e = zip_.Find(name);
  if (e == nullptr) return NotFound(std::string(name) + ": missing from the archive");
  if (e->size > limit) {
    return Corrupt(std::string(name) + ": " + std::to_string(e->size) +
                   " bytes, over the limit of " + std::to_string(limit));
  }
  std::string out;
  out.reserve(e->size);
  CARTON_RETURN_IF_ERROR(zip_.ReadTo(name, [&](ByteView chunk) {
    out.append(AsChars(chunk));
    return Status::Ok();
  }));
  return out;
}

Status CartonReader::ReadManifest() {
  if (manifest_status_) return *manifest_status_;
  auto text = ReadText("MANIFEST", limits_.max_manifest_size);
  if (!text.ok()) {
    Status s = text.status();
    if (s.code() == StatusCode::kNotFound)
      s = Corrupt(std::string(manifest::kManifestPath) + ": missing");
    manifest_status_ = s;
    return s;
  }
  auto parsed = manifest::Manifest::Parse(AsBytes(*text));
  if (!parsed.ok()) {
    manifest_status_ = parsed.status();
    return parsed.status();
  }
  const manifest::Digest hash = manifest::Sha256Of(AsBytes(*text));
  manifest_ = std::make_shared<const ManifestFile>(
      ManifestFile{std::move(text).value(), std::move(parsed).value(), hash});
  manifest_status_ = Status::Ok();
  return Status::Ok();
}

const ManifestFile& CartonReader::manifest_file() const {
  if (manifest_ == nullptr) {
    status_internal::DieOnErrorValue(Internal("CartonReader: MANIFEST has not been read"));
  }
  return *manifest_;
}

std::shared_ptr<const ManifestFile> CartonReader::shared_manifest() const { return manifest_; }

Status CartonReader::ReadLinks() {
  if (links_status_) return *links_status_;
  auto read = [&]() -> Status {
    const ZipEntry* e = zip_.Find("LINKS");
    if (e == nullptr) return Status::Ok();
    if (e->is_dir) return Corrupt("LINKS: is a directory, not a file");
    CARTON_ASSIGN_OR_RETURN(std::string text, ReadText("LINKS", limits_.links.max_size));
    CARTON_ASSIGN_OR_RETURN(links::Links parsed, links::ParseLinks(text, limits_.links));
    links_ = std::move(parsed);
    return Status::Ok();
  };
  links_status_ = read();
  return *links_status_;
}

const std::optional<links::Links>& CartonReader::links() const { return links_; }

std::vector<CartonProblem> CartonReader::EntryProblems() const {
  const manifest::Manifest* m = manifest_ != nullptr ? &manifest_->manifest : nullptr;
  std::vector<CartonProblem> problems;
  for (const auto& e : zip_.entries()) {
    if (e.is_symlink) {
      auto target = ResolveSymlinkEntry(zip_, e, m);
      if (!target.ok()) {
        // The message already names the entry.
        std::string message(target.status().message());
        if (message.rfind(e.name + ": ", 0) == 0) message.erase(0, e.name.size() + 2);
        problems.push_back({e.name, std::move(message), target.status().code()});
      }
    }
    if (e.encrypted) problems.push_back({e.name, "encrypted entries are not allowed"});
    if (!e.is_dir && !CompressionFromZipMethod(e.method)) {
      problems.push_back(
          {e.name,
           "compression method " + std::to_string(e.method) + " is not stored, deflate or zstd",
           StatusCode::kUnsupported});
    }
    if (m != nullptr && !e.is_dir && !manifest::IsReservedPath(e.name) &&
        m->Find(e.name) == nullptr) {
      problems.push_back({e.name, "in the archive but not listed in MANIFEST"});
    }
  }
  return problems;
}

std::vector<CartonProblem> CartonReader::LinkProblems() {
  const manifest::Manifest& m = manifest();
  const bool has_links = zip_.Find("LINKS") != nullptr;
  std::vector<CartonProblem> problems;
  linked_files_.clear();
  for (const auto& me : m.entries()) {
    const ZipEntry* e = zip_.Find(me.path);
    if (e != nullptr && !e->is_dir) continue;
    // LINKS may name files that live elsewhere; without it the file is lost.
    const std::vector<std::string>* urls = nullptr;
    if (links_) {
      auto it = links_->urls.find(me.sha256);
      if (it != links_->urls.end()) urls = &it->second;
    }
    if (urls != nullptr) {
      linked_files_.push_back({me.path, me.sha256, *urls});
    } else {
      problems.push_back(
          {me.path, "listed in MANIFEST but missing from the archive, and " +
                        (has_links ? "LINKS has no url for its sha256 " + manifest::ToHex(me.sha256)
                                   : std::string("there is no LINKS"))});
    }
  }
  if (links_) {
    // Stricter than the spec (carton/FORMAT.md K3): a hash that names no
    // file of this carton is a stale or mistaken LINKS, or urls smuggled in
    // for something the carton does not hold.
    std::set<manifest::Digest> listed;
    for (const auto& me : m.entries()) listed.insert(me.sha256);
    for (const auto& [digest, urls] : links_->urls) {
      if (listed.count(digest) == 0) problems.push_back({"LINKS", StrayLinksHash(digest)});
    }
  }
  return problems;
}

Status CartonReader::ReadMetadata() {
  if (metadata_status_) return *metadata_status_;
  metadata_status_ = [&]() -> Status {
    auto config_text = ReadText("carton.toml", limits_.config.max_size);
    if (!config_text.ok()) {
      if (config_text.status().code() == StatusCode::kNotFound) {
        return Corrupt("carton.toml: missing");
      }
      return config_text.status();
    }
    CARTON_ASSIGN_OR_RETURN(config_, ParseConfig(*config_text, "carton.toml", limits_.config));
    if (zip_.Find("tensor_data/index.toml") == nullptr) return Status::Ok();
    CARTON_ASSIGN_OR_RETURN(std::string index_text,
                            ReadText("tensor_data/index.toml", limits_.tensor_data.max_index_size));
    CARTON_ASSIGN_OR_RETURN(tensor_index_, ParseIndex(index_text, limits_.tensor_data));
    return Status::Ok();
  }();
  return *metadata_status_;
}

Status CartonReader::Check() {
  CARTON_RETURN_IF_ERROR(ReadManifest().WithContext(location_));
  if (auto problems = EntryProblems(); !problems.empty()) {
    return problems.front().ToStatus().WithContext(location_);
  }
  CARTON_RETURN_IF_ERROR(ReadLinks().WithContext(location_));
  if (auto problems = LinkProblems(); !problems.empty()) {
    return problems.front().ToStatus().WithContext(location_);
  }
  return ReadMetadata().WithContext(location_);
}

Result<std::string> CartonReader::DataEntry(const std::string& name) const {
  const ZipEntry* e = zip_.Find(name);
  if (e == nullptr) return NotFound(name + ": not in the archive");
  if (!e->is_symlink) return name;
  return ResolveSymlinkEntry(zip_, *e);
}

Status CartonReader::ExtractTo(const std::string& name, const std::string& dest,
                               const std::function<void(std::uint64_t)>& on_bytes) const {
  const ManifestFile& m = manifest_file();
  if (name == "MANIFEST") return WriteFileAtomically(dest, AsBytes(m.text));
  const manifest::ManifestEntry* me = m.manifest.Find(name);
  if (me == nullptr) return NotFound(name + ": not listed in MANIFEST");
  CARTON_ASSIGN_OR_RETURN(std::string source, DataEntry(name));
  CARTON_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(dest));
  manifest::Sha256 h;
  CARTON_RETURN_IF_ERROR(zip_.ReadTo(source, [&](ByteView chunk) {
    h.Update(chunk);
    if (on_bytes) on_bytes(chunk.size());
    return file.Write(chunk);
  }));
  CARTON_RETURN_IF_ERROR(manifest::CheckDigest(name, h.Finish(), me->sha256));
  return file.Commit();
}

}  // namespace carton
