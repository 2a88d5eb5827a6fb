// carton push: a .carton to an OCI registry (oci/FORMAT.md "Cartons as OCI
// artifacts"). Every blob is asked for first and sent only when missing;
// stored files are sent straight from the carton's mapping, compressed ones
// decoded first, linked ones from the blob cache.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>

#include "artifact.h"
#include "carton/carton/links.h"
#include "carton/carton/reader.h"
#include "carton/common/mapped_file.h"
#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"
#include "carton/oci/artifact.h"
#include "layout.h"
#include "session.h"

namespace carton::oci {
namespace {

using internal::OciSession;

// Decoded entries up to this size are held in memory while they are sent;
// larger ones go through an unlinked temporary file.
constexpr std::uint64_t kDecodeInMemory = std::uint64_t{64} << 20;

// One blob to push and where its bytes come from.
struct PushItem {
  std::string path;  // the carton path it is pushed for
  manifest::Digest digest{};
  std::uint64_t size = 0;  // 0 and unknown for a linked file until resolved
  enum class Source { kEntry, kLinked, kBytes } source = Source::kEntry;
  std::string entry;     // kEntry: the zip entry holding the bytes
  bool symlink = false;  // `path` is a symlink entry (`entry` is its target)
  const std::vector<std::string>* urls = nullptr;  // kLinked
  std::string bytes;                               // kBytes: MANIFEST, LINKS, the config
  std::string action;
};

// The bytes of a compressed entry, decoded, and what keeps them alive.
struct Decoded {
  std::vector<std::byte> memory;
  MappedFile file;
  ByteView view;
};

Result<Decoded> Decode(const ZipReader& zip, const ZipEntry& e, const std::string& temp_dir) {
  Decoded d;
  if (e.size <= kDecodeInMemory) {
    CARTON_ASSIGN_OR_RETURN(d.memory, zip.Read(e.name));
    d.view = d.memory;
    return d;
  }
  std::error_code ec;
  std::filesystem::create_directories(temp_dir, ec);
  std::string path = temp_dir + "/.push-XXXXXX";
  UniqueFd fd(::mkostemp(path.data(), O_CLOEXEC));
  if (!fd.valid()) return ErrnoIoError(errno, path + ": cannot create");
  ::unlink(path.c_str());  // gone when the descriptor closes
  CARTON_RETURN_IF_ERROR(zip.ReadTo(e.name, [&](ByteView chunk) {
    while (!chunk.empty()) {
      const ssize_t n = ::write(fd.get(), chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoIoError(errno, temp_dir + ": cannot write a decoded entry");
      chunk = chunk.subspan(static_cast<std::size_t>(n));
    }
    return Status::Ok();
  }));
  CARTON_ASSIGN_OR_RETURN(d.file, MappedFile::Open("/proc/self/fd/" + std::to_string(fd.get())));
  d.view = d.file.bytes();
  return d;
}

std::string_view LayerType(const std::string& path) {
  if (path == "carton.toml") return kOciCartonTomlMediaType;
  return kOciFileMediaType;
}

}  // namespace

Result<OciPushReport> PushCarton(const Location& carton, const Location& reference,
                                 const OciOptions& options) {
  const std::string& carton_path = carton.text();
  CARTON_ASSIGN_OR_RETURN(OciSession s, internal::OpenOciSession(reference, options));
  if (s.ref.digest) {
    return InvalidArgument(s.where + ": push needs a tag (oci://HOST/REPO:TAG), not a digest");
  }
  LinkOptions link;
  link.cache_dir = s.cache_root;
  link.fetch = options.client.fetch;
  link.fetch.allow_file_links = options.allow_file_links;
  // Every byte is read (pushed or compressed to infer the layout), so a
  // carton given by URL is downloaded first.
  CARTON_ASSIGN_OR_RETURN(
      CartonReader reader,
      CartonReader::OpenLocal(carton, std::filesystem::temp_directory_path().string(), link));
  // The entry rules, MANIFEST, LINKS and which files it covers.
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ZipReader& zip = reader.zip();
  const ManifestFile& mf = reader.manifest_file();
  const manifest::Manifest& m = mf.manifest;
  const manifest::Digest manifest_hash = mf.hash;
  std::map<std::string, const LinkedFile*> linked_by_path;
  for (const LinkedFile& f : reader.linked_files()) linked_by_path[f.path] = &f;

  auto layout = internal::InferOciLayout(reader, options.threads);
  if (!layout.ok()) return layout.status().WithContext(carton_path);

  // One item per distinct digest; a file's bytes come from a regular entry
  // when one has them (a symlink entry's digest is its target's).
  std::vector<PushItem> items;
  std::map<manifest::Digest, std::size_t> by_digest;
  std::vector<std::size_t> layer_item;  // MANIFEST order
  for (const auto& me : m.entries()) {
    PushItem item;
    item.path = me.path;
    item.digest = me.sha256;
    const ZipEntry* e = zip.Find(me.path);
    if (e == nullptr) {
      item.source = PushItem::Source::kLinked;
      item.urls = &linked_by_path.at(me.path)->urls;
    } else {
      item.entry = e->name;
      if (e->is_symlink) {
        item.symlink = true;
        // Its bytes are the target's (Check() resolved it and compared
        // their sha256 with MANIFEST's).
        auto target = reader.DataEntry(e->name);
        if (!target.ok()) return target.status().WithContext(carton_path);
        item.entry = *target;
      }
      item.size = zip.Find(item.entry)->size;
    }
    auto [it, inserted] = by_digest.emplace(me.sha256, items.size());
    if (inserted) {
      items.push_back(std::move(item));
    } else if ((items[it->second].source == PushItem::Source::kLinked &&
                item.source == PushItem::Source::kEntry) ||
               (items[it->second].symlink && item.source == PushItem::Source::kEntry &&
                !item.symlink)) {
      // The zip has the bytes after all; or the blob is reported under a
      // file rather than a link to it.
      items[it->second] = std::move(item);
    }
    layer_item.push_back(it->second);
  }
  auto add_bytes = [&](std::string path, std::string bytes) {
    PushItem item;
    item.path = std::move(path);
    item.digest = manifest::Sha256Of(AsBytes(bytes));
    item.size = bytes.size();
    item.source = PushItem::Source::kBytes;
    item.bytes = std::move(bytes);
    auto [it, inserted] = by_digest.emplace(item.digest, items.size());
    if (inserted) items.push_back(std::move(item));
    return it->second;
  };
  const std::size_t manifest_item = add_bytes("MANIFEST", mf.text);
  std::optional<std::size_t> links_item;
  if (zip.Find("LINKS") != nullptr) {
    auto text = reader.ReadText("LINKS", links::kMaxLinksSize);
    if (!text.ok()) return text.status().WithContext(carton_path);
    links_item = add_bytes("LINKS", std::move(text).value());
  }
  const std::string config = internal::WriteOciLayout(*layout);
  const std::size_t config_item = add_bytes("(config)", config);

  const std::string& repo = s.ref.repository;
  std::vector<Status> errors(items.size());
  std::mutex mu;
  OciPushReport report;
  auto push_one = [&](std::size_t i) {
    PushItem& item = items[i];
    auto fail = [&](const Status& e) { errors[i] = e.WithContext(s.where + ": " + item.path); };
    Decoded decoded;
    MappedFile blob;
    if (item.source == PushItem::Source::kLinked) {
      // The registry may have it already; else it comes through LINKS into
      // the blob cache first.
      auto present = s.client->StatBlob(repo, item.digest);
      if (!present.ok()) return fail(present.status());
      if (*present) {
        item.size = **present;
        item.action = std::string(oci::BlobPushName(oci::BlobPush::kPresent));
        return;
      }
      LinkedFile f{item.path, item.digest, *item.urls};
      auto path = ResolveLinkedFile(f, link, /*rehash=*/false);
      if (!path.ok()) return fail(path.status());
      auto mapped = MappedFile::Open(*path);
      if (!mapped.ok()) return fail(mapped.status());
      blob = std::move(mapped).value();
      item.size = blob.size();
    }
    auto produce = [&]() -> Result<ByteView> {
      switch (item.source) {
        case PushItem::Source::kBytes:
          return AsBytes(item.bytes);
        case PushItem::Source::kLinked:
          return blob.bytes();
        case PushItem::Source::kEntry:
          break;
      }
      const ZipEntry* e = zip.Find(item.entry);
      if (e->method == 0) return zip.MappedData(item.entry);
      CARTON_ASSIGN_OR_RETURN(decoded, Decode(zip, *e, s.cache_root + "/tmp"));
      return decoded.view;
    };
    auto how = s.client->PushBlobLazily(repo, item.digest, item.size, produce);
    if (!how.ok()) return fail(how.status());
    item.action = std::string(oci::BlobPushName(*how));
    if (item.source == PushItem::Source::kEntry && zip.Find(item.entry)->method == 0) {
      if (auto view = zip.MappedData(item.entry); view.ok()) ReleaseMappedPages(*view);
    }
    if (*how == oci::BlobPush::kUploaded) {
      std::lock_guard lock(mu);
      report.bytes_uploaded += item.size;
    }
  };
  // The config goes last: it names the others (registries do not check
  // that, but a reader that sees it may expect them).
  ParallelFor(items.size(), options.jobs, [&](std::size_t i) {
    if (i != config_item) push_one(i);
  });
  for (const Status& e : errors) {
    if (!e.ok()) return e;
  }
  push_one(config_item);
  if (!errors[config_item].ok()) return errors[config_item];

  internal::OciArtifact artifact;
  artifact.config_digest = items[config_item].digest;
  artifact.config_size = items[config_item].size;
  artifact.manifest_hash = manifest_hash;
  for (std::size_t k = 0; k < m.entries().size(); ++k) {
    const PushItem& item = items[layer_item[k]];
    const std::string& path = m.entries()[k].path;
    artifact.layers.push_back({std::string(LayerType(path)), item.digest, item.size, path});
  }
  artifact.layers.push_back({std::string(kOciManifestMediaType), items[manifest_item].digest,
                             items[manifest_item].size, "MANIFEST"});
  if (links_item) {
    artifact.layers.push_back({std::string(kOciLinksMediaType), items[*links_item].digest,
                               items[*links_item].size, "LINKS"});
  }
  const std::string manifest_json = internal::WriteOciArtifact(artifact);
  if (manifest_json.size() > kMaxImageManifestSize) {
    return Unsupported(s.where + ": " + carton_path + " has too many files for one OCI manifest (" +
                       std::to_string(manifest_json.size()) + " bytes; registries accept " +
                       std::to_string(kMaxImageManifestSize) + ")");
  }
  auto digest =
      s.client->PutManifest(repo, s.ref.tag, oci::kImageManifestMediaType, AsBytes(manifest_json));
  if (!digest.ok()) return digest.status().WithContext(s.where);

  report.reference = s.where;
  report.manifest_digest = *digest;
  report.manifest_hash = manifest_hash;
  report.reproducible = layout->layout_sha256.has_value();
  for (const PushItem& item : items) {
    report.blobs.push_back({item.path, item.digest, item.size, item.action});
  }
  return report;
}

}  // namespace carton::oci
