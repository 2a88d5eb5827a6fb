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
#include "modelpack.h"
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

// The layer of the file at `path` (or MANIFEST, LINKS) in `format`: its
// media type, and in a ModelPack whether its kind was guessed.
internal::OciLayer FileLayer(const std::string& path, OciFormat format) {
  internal::OciLayer layer;
  layer.title = path;
  if (format == OciFormat::kModelPack) {
    internal::ModelPackLayerType t = internal::ModelPackLayerTypeOf(path);
    layer.media_type = std::move(t.media_type);
    layer.kind_guessed = t.guessed;
  } else {
    // MANIFEST lists no file named MANIFEST or LINKS.
    layer.media_type = path == "carton.toml" ? kOciCartonTomlMediaType
                       : path == "MANIFEST"  ? kOciManifestMediaType
                       : path == "LINKS"     ? kOciLinksMediaType
                                             : kOciFileMediaType;
  }
  return layer;
}

// The blobs of one push: one item per distinct digest, and the item of
// each layer.
struct PushPlan {
  std::vector<PushItem> items;
  std::map<manifest::Digest, std::size_t> by_digest;
  std::vector<std::size_t> layer_item;  // MANIFEST order
  std::size_t manifest_item = 0;
  std::optional<std::size_t> links_item;
  std::size_t config_item = 0;
  std::optional<std::size_t> model_config_item;  // ModelPack: the spec's config blob

  // Adds the item of the next MANIFEST file, or lets it stand for the
  // item with its digest when it has the bytes where that one does not.
  void AddFile(PushItem item) {
    auto [it, inserted] = by_digest.emplace(item.digest, items.size());
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

  // Adds an item of bytes (MANIFEST, LINKS, the config) unless an item has
  // their digest; returns that item's index.
  std::size_t AddBytes(std::string path, std::string bytes) {
    PushItem item;
    item.path = std::move(path);
    item.digest = manifest::Sha256Of(AsBytes(bytes));
    item.size = bytes.size();
    item.source = PushItem::Source::kBytes;
    item.bytes = std::move(bytes);
    auto [it, inserted] = by_digest.emplace(item.digest, items.size());
    if (inserted) items.push_back(std::move(item));
    return it->second;
  }
};

// The item of MANIFEST file `me`: its bytes are in its entry, in its
// symlink entry's target, or behind LINKS. Errors: reading the target.
Result<PushItem> FileItem(const CartonReader& reader, const manifest::ManifestEntry& me,
                          const std::map<std::string, const LinkedFile*>& linked_by_path) {
  const ZipReader& zip = reader.zip();
  PushItem item;
  item.path = me.path;
  item.digest = me.sha256;
  const ZipEntry* e = zip.Find(me.path);
  if (e == nullptr) {
    item.source = PushItem::Source::kLinked;
    item.urls = &linked_by_path.at(me.path)->urls;
    return item;
  }
  item.entry = e->name;
  if (e->is_symlink) {
    item.symlink = true;
    // Its bytes are the target's (Check() resolved it and compared
    // their sha256 with MANIFEST's).
    CARTON_ASSIGN_OR_RETURN(item.entry, reader.DataEntry(e->name));
  }
  item.size = zip.Find(item.entry)->size;
  return item;
}

// The items of every blob the push sends: MANIFEST's files, MANIFEST,
// LINKS when there is one, and the config blob written from `layout`.
Result<PushPlan> PlanPush(const CartonReader& reader, const internal::OciLayout& layout,
                          const std::string& carton_path) {
  const ManifestFile& mf = reader.manifest_file();
  std::map<std::string, const LinkedFile*> linked_by_path;
  for (const LinkedFile& f : reader.linked_files()) linked_by_path[f.path] = &f;
  // One item per distinct digest; a file's bytes come from a regular entry
  // when one has them (a symlink entry's digest is its target's).
  PushPlan plan;
  for (const auto& me : mf.manifest.entries()) {
    auto item = FileItem(reader, me, linked_by_path);
    if (!item.ok()) return item.status().WithContext(carton_path);
    plan.AddFile(std::move(item).value());
  }
  plan.manifest_item = plan.AddBytes("MANIFEST", mf.text);
  if (reader.zip().Find("LINKS") != nullptr) {
    auto text = reader.ReadText("LINKS", links::kMaxLinksSize);
    if (!text.ok()) return text.status().WithContext(carton_path);
    plan.links_item = plan.AddBytes("LINKS", std::move(text).value());
  }
  plan.config_item = plan.AddBytes("(config)", internal::WriteOciLayout(layout));
  return plan;
}

// Sends the items' blobs the registry lacks, recording each item's action
// or its error. Push() may run for different items at once.
class BlobPusher {
 public:
  BlobPusher(const OciSession& s, const ZipReader& zip, const Environment& link,
             std::vector<PushItem>* items)
      : s_(s), zip_(zip), link_(link), items_(*items), errors_(items->size()) {}

  // Pushes item `i`; a failure goes to errors()[i], naming its path.
  void Push(std::size_t i) {
    PushItem& item = items_[i];
    if (Status st = PushBlob(item); !st.ok()) {
      errors_[i] = st.WithContext(s_.where + ": " + item.path);
    }
  }

  const std::vector<Status>& errors() const { return errors_; }
  // The bytes uploaded, once no Push() runs.
  std::uint64_t bytes_uploaded() const { return bytes_uploaded_; }

 private:
  // Sends `item`'s blob unless the registry has it; sets its action.
  Status PushBlob(PushItem& item) {
    Decoded decoded;
    MappedFile blob;
    if (item.source == PushItem::Source::kLinked) {
      CARTON_ASSIGN_OR_RETURN(const bool present, MapLinked(item, &blob));
      if (present) return Status::Ok();
    }
    auto produce = [&]() -> Result<ByteView> { return Produce(item, blob, &decoded); };
    auto how = s_.client->PushBlobLazily(s_.ref.repository, item.digest, item.size, produce);
    if (!how.ok()) return how.status();
    item.action = std::string(oci::BlobPushName(*how));
    if (item.source == PushItem::Source::kEntry && zip_.Find(item.entry)->method == 0) {
      if (auto view = zip_.MappedData(item.entry); view.ok()) ReleaseMappedPages(*view);
    }
    if (*how == oci::BlobPush::kUploaded) {
      std::lock_guard lock(mu_);
      bytes_uploaded_ += item.size;
    }
    return Status::Ok();
  }

  // A linked item: true when the registry has its blob (its size and
  // action set); else false, its blob mapped into `blob`.
  Result<bool> MapLinked(PushItem& item, MappedFile* blob) {
    // The registry may have it already; else it comes through LINKS into
    // the blob cache first.
    auto present = s_.client->StatBlob(s_.ref.repository, item.digest);
    if (!present.ok()) return present.status();
    if (*present) {
      item.size = **present;
      item.action = std::string(oci::BlobPushName(oci::BlobPush::kPresent));
      return true;
    }
    // Held in use from before the lookup until it is mapped (the mapping
    // keeps its bytes), so that gc does not remove the blob in between.
    links::BlobsInUse uses = s_.cache.Uses();
    CARTON_RETURN_IF_ERROR(uses.Hold(item.digest));
    LinkedFile f{item.path, item.digest, *item.urls};
    CARTON_ASSIGN_OR_RETURN(std::string path, ResolveLinkedFile(f, link_, /*rehash=*/false));
    CARTON_ASSIGN_OR_RETURN(*blob, MappedFile::Open(path));
    item.size = blob->size();
    return false;
  }

  // The bytes of `item`: its own, its mapped linked `blob`, or its zip
  // entry's (a compressed one decoded into `decoded`).
  Result<ByteView> Produce(const PushItem& item, const MappedFile& blob, Decoded* decoded) const {
    switch (item.source) {
      case PushItem::Source::kBytes:
        return AsBytes(item.bytes);
      case PushItem::Source::kLinked:
        return blob.bytes();
      case PushItem::Source::kEntry:
        break;
    }
    const ZipEntry* e = zip_.Find(item.entry);
    if (e->method == 0) return zip_.MappedData(item.entry);
    CARTON_ASSIGN_OR_RETURN(*decoded, Decode(zip_, *e, s_.cache_root + "/tmp"));
    return decoded->view;
  }

  const OciSession& s_;
  const ZipReader& zip_;
  const Environment& link_;  // linked files are fetched by its rules
  std::vector<PushItem>& items_;
  std::vector<Status> errors_;  // one per item, each written by its Push()
  std::mutex mu_;
  std::uint64_t bytes_uploaded_ = 0;  // guarded by mu_
};

// Pushes every item's blob, `jobs` at once, and the configs' last; the
// first item's error.
Status PushBlobs(BlobPusher& pusher, const PushPlan& plan, unsigned jobs) {
  // The configs go last: they name the others (registries do not check
  // that, but a reader that sees them may expect them).
  auto is_config = [&](std::size_t i) {
    return i == plan.config_item || i == plan.model_config_item;
  };
  ParallelFor(plan.items.size(), jobs, [&](std::size_t i) {
    if (!is_config(i)) pusher.Push(i);
  });
  for (const Status& e : pusher.errors()) {
    if (!e.ok()) return e;
  }
  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    if (!is_config(i)) continue;
    pusher.Push(i);
    if (!pusher.errors()[i].ok()) return pusher.errors()[i];
  }
  return Status::Ok();
}

// The OCI image manifest of the pushed carton in `format`: a layer per
// MANIFEST file, in its order, then MANIFEST and LINKS. Sizes are the
// items' (a linked file's is known once it was pushed).
internal::OciArtifact ArtifactOf(const PushPlan& plan, const manifest::Manifest& m,
                                 const manifest::Digest& manifest_hash, OciFormat format) {
  const std::vector<PushItem>& items = plan.items;
  internal::OciArtifact artifact;
  artifact.format = format;
  artifact.config_digest = items[plan.config_item].digest;
  artifact.config_size = items[plan.config_item].size;
  artifact.manifest_hash = manifest_hash;
  auto add = [&](const std::string& path, const PushItem& item) {
    internal::OciLayer layer = FileLayer(path, format);
    layer.digest = item.digest;
    layer.size = item.size;
    artifact.layers.push_back(std::move(layer));
  };
  for (std::size_t k = 0; k < m.entries().size(); ++k) {
    add(m.entries()[k].path, items[plan.layer_item[k]]);
  }
  add("MANIFEST", items[plan.manifest_item]);
  if (plan.links_item) add("LINKS", items[*plan.links_item]);
  if (plan.model_config_item) {
    artifact.model_config_digest = items[*plan.model_config_item].digest;
    artifact.model_config_size = items[*plan.model_config_item].size;
  }
  return artifact;
}

// The spec's config blob of the ModelPack of `reader`'s carton pushed as
// `ref`: its name, the tag as its version, carton.toml's metadata, and the
// layers' digests.
std::string ModelPackConfigOf(const CartonReader& reader, const OciReference& ref,
                              const PushPlan& plan) {
  const CartonConfig& c = reader.config();
  internal::ModelPackConfig mc;
  mc.name = c.model_name.value_or(ref.repository.substr(ref.repository.rfind('/') + 1));
  mc.version = ref.tag;
  mc.license = c.license;
  // The one-line short_description is the title; the longer
  // model_description, when there is one, the description.
  mc.title = c.short_description;
  mc.description = c.model_description ? c.model_description : c.short_description;
  mc.doc_url = c.homepage;
  mc.source_url = c.repository;
  if (c.runner.runner_name == "torchscript") {
    mc.format = "pt";
  } else {
    for (const auto& me : reader.manifest_file().manifest.entries()) {
      if (me.path.starts_with("model/") && me.path.ends_with(".safetensors")) {
        mc.format = "safetensors";
      }
    }
  }
  // The layers' digests, as ArtifactOf orders them (the sizes do not
  // matter here).
  mc.diff_ids = internal::ModelPackLayerDigests(
      ArtifactOf(plan, reader.manifest_file().manifest, {}, OciFormat::kModelPack));
  return internal::WriteModelPackConfig(mc);
}

// Adds the spec's config blob to `plan` for a ModelPack push. Errors:
// kUnsupported when a file sits where carton's config layer goes.
Status PlanModelPack(const CartonReader& reader, const internal::OciSession& s,
                     const std::string& carton_path, PushPlan* plan) {
  if (reader.manifest_file().manifest.Find(kModelPackCartonConfigPath) != nullptr) {
    return Unsupported(carton_path + ": " + std::string(kModelPackCartonConfigPath) +
                       " is a file of the carton, where a ModelPack keeps carton's config");
  }
  plan->model_config_item =
      plan->AddBytes("(modelpack config)", ModelPackConfigOf(reader, s.ref, *plan));
  return Status::Ok();
}

// Puts the image manifest of `artifact` under the session's tag; its
// digest.
Result<manifest::Digest> PutArtifact(const OciSession& s, const internal::OciArtifact& artifact,
                                     const std::string& carton_path) {
  const std::string manifest_json = internal::WriteOciArtifact(artifact);
  if (manifest_json.size() > kMaxImageManifestSize) {
    return Unsupported(s.where + ": " + carton_path + " has too many files for one OCI manifest (" +
                       std::to_string(manifest_json.size()) + " bytes; registries accept " +
                       std::to_string(kMaxImageManifestSize) + ")");
  }
  auto digest = s.client->PutManifest(s.ref.repository, s.ref.tag, oci::kImageManifestMediaType,
                                      AsBytes(manifest_json));
  if (!digest.ok()) return digest.status().WithContext(s.where);
  return *digest;
}

}  // namespace

Result<OciPushReport> PushCarton(CartonSource& carton, const Location& reference,
                                 const OciOptions& options) {
  const std::string& carton_path = carton.location().text();
  CARTON_ASSIGN_OR_RETURN(OciSession s,
                          internal::OpenOciSession(reference, carton.environment(), options));
  if (s.ref.digest) {
    return InvalidArgument(s.where + ": push needs a tag (oci://HOST/REPO:TAG), not a digest");
  }
  // Every byte is read (pushed or compressed to infer the layout), so a
  // carton given by URL is downloaded first.
  CARTON_ASSIGN_OR_RETURN(CartonReader * opened, carton.Reader(ReadScope::kWhole));
  CartonReader& reader = *opened;
  // The entry rules, MANIFEST, LINKS and which files it covers.
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ManifestFile& mf = reader.manifest_file();
  auto layout = internal::InferOciLayout(reader, s.env.threads);
  if (!layout.ok()) return layout.status().WithContext(carton_path);

  CARTON_ASSIGN_OR_RETURN(PushPlan plan, PlanPush(reader, *layout, carton_path));
  if (options.format == OciFormat::kModelPack) {
    CARTON_RETURN_IF_ERROR(PlanModelPack(reader, s, carton_path, &plan));
  }
  BlobPusher pusher(s, reader.zip(), s.env, &plan.items);
  CARTON_RETURN_IF_ERROR(PushBlobs(pusher, plan, s.env.jobs));
  CARTON_ASSIGN_OR_RETURN(
      const manifest::Digest digest,
      PutArtifact(s, ArtifactOf(plan, mf.manifest, mf.hash, options.format), carton_path));

  OciPushReport report;
  report.reference = s.where;
  report.manifest_digest = digest;
  report.manifest_hash = mf.hash;
  report.bytes_uploaded = pusher.bytes_uploaded();
  report.reproducible = layout->layout_sha256.has_value();
  for (const PushItem& item : plan.items) {
    report.blobs.push_back({item.path, item.digest, item.size, item.action});
  }
  return report;
}

}  // namespace carton::oci
