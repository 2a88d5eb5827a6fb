// Shrink: moving a carton's large files out of its zip into LINKS
// (links.h; carton/FORMAT.md "LINKS").
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include "blob_encode.h"
#include "carton/carton/links.h"
#include "carton/carton/reader.h"
#include "carton/carton/symlink.h"
#include "carton/carton/writer_options.h"
#include "carton/common/atomic_file.h"
#include "carton/manifest/sha256.h"
#include "entry_copy.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

// The metadata `carton info` reads stays in the zip whatever its size.
bool MustStay(std::string_view path) {
  return path == "carton.toml" || path == "tensor_data/index.toml";
}

std::string DirOf(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The URL for a blob, checked by the LINKS rules.
Result<std::string> BlobUrl(const std::string& prefix, const manifest::Digest& d) {
  std::string base = prefix;
  if (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = base + "/" + manifest::ToHex(d);
  links::Links probe;
  probe.urls[d] = {url};
  auto parsed = links::ParseLinks(links::WriteLinks(probe));
  if (!parsed.ok()) {
    return InvalidArgument("--url-prefix \"" + prefix +
                           "\" gives a url LINKS cannot hold: " + parsed.status().message());
  }
  return url;
}

// Whether `path` already holds the blob `d` (a previous run's output).
bool HasBlob(const std::string& path, const manifest::Digest& d) {
  auto got = manifest::HashFile(path);
  return got.ok() && *got == d;
}

// Without urls by digest, Shrink writes blobs itself: it needs a url prefix
// LINKS can hold and a blobs directory (created here).
Status PrepareBlobsDir(const ShrinkOptions& options) {
  if (options.url_prefix.empty()) return InvalidArgument("a url prefix is required");
  if (options.blobs_dir.empty()) return InvalidArgument("a blobs directory is required");
  CARTON_RETURN_IF_ERROR(BlobUrl(options.url_prefix, manifest::Digest{}).status());
  std::error_code ec;
  fs::create_directories(options.blobs_dir, ec);
  if (ec) return IoError(options.blobs_dir + ": cannot create: " + ec.message());
  return Status::Ok();
}

// Every digest given urls must name a file of `in` that may leave its zip.
Status CheckMovableDigests(const ManifestFile& m, const ShrinkOptions& options,
                           const std::string& in) {
  for (const auto& named : options.urls) {
    const manifest::Digest& digest = named.first;  // a lambda below uses it
    const auto& entries = m.manifest.entries();
    const bool movable = std::any_of(entries.begin(), entries.end(), [&](const auto& me) {
      return me.sha256 == digest && !MustStay(me.path);
    });
    if (!movable) {
      return InvalidArgument("sha256 " + manifest::ToHex(digest) + " names no file of " + in +
                             " that can leave its zip (carton.toml and tensor_data/index.toml "
                             "always stay)");
    }
  }
  return Status::Ok();
}

// The bytes Shrink's progress counts: MANIFEST and every file it lists.
std::uint64_t ProgressTotal(const ZipReader& zip, const ManifestFile& m) {
  std::uint64_t total = m.text.size();
  for (const auto& me : m.manifest.entries()) {
    if (const ZipEntry* e = zip.Find(me.path)) total += e->size;
  }
  return total;
}

// One Shrink pass over an opened carton: copies the entries that stay,
// moves the others to blobs and LINKS, and writes LINKS and MANIFEST last.
class Shrinker {
 public:
  Shrinker(const CartonReader& reader, ZipWriter& writer, const std::string& out_dir,
           const std::string& in, const ShrinkOptions& options,
           const std::function<void(std::uint64_t)>& count)
      : reader_(reader),
        zip_(reader.zip()),
        m_(reader.manifest_file()),
        writer_(writer),
        copier_(reader, writer, out_dir),
        in_(in),
        options_(options),
        by_digest_(!options.urls.empty()),
        count_(count),
        new_links_(reader.links().value_or(links::Links{})) {
    report_.manifest_hash = m_.hash;
  }

  // Copies or moves every entry of the input but LINKS and MANIFEST.
  Status ShrinkEntries();
  // Writes LINKS (when it lists any url) and MANIFEST, and finishes the zip.
  Status Finish();
  // What ShrinkEntries did.
  ShrinkReport& report() { return report_; }

 private:
  // Copies or moves one file entry.
  Status ShrinkEntry(const ZipEntry& e);
  // Writes the blob of moved entry `e` and its encoded copies, reusing
  // those a previous run left in the blobs directory.
  Status WriteBlob(const ZipEntry& e, const manifest::Digest& digest, std::uint64_t size);
  // Adds the urls of moved entry `name` to LINKS.
  Status AddUrls(const std::string& name, const manifest::Digest& digest);

  const CartonReader& reader_;
  const ZipReader& zip_;
  const ManifestFile& m_;
  ZipWriter& writer_;
  internal::EntryCopier copier_;
  const std::string& in_;
  const ShrinkOptions& options_;
  const bool by_digest_;
  const std::function<void(std::uint64_t)>& count_;
  links::Links new_links_;
  ShrinkReport report_;
  std::set<manifest::Digest> written_;
};

Status Shrinker::ShrinkEntries() {
  for (const ZipEntry& e : zip_.entries()) {
    if (e.is_dir) {
      CARTON_RETURN_IF_ERROR(writer_.AddDirectory(e.name));
      continue;
    }
    if (manifest::IsReservedPath(e.name)) continue;  // LINKS and MANIFEST come last
    CARTON_RETURN_IF_ERROR(ShrinkEntry(e));
  }
  return Status::Ok();
}

Status Shrinker::ShrinkEntry(const ZipEntry& e) {
  const manifest::ManifestEntry* me = m_.manifest.Find(e.name);
  // A symlink entry stands for its target's bytes (EntryCopier).
  std::uint64_t size = e.size;
  if (e.is_symlink) {
    auto target = ResolveSymlinkEntry(zip_, e);
    if (!target.ok()) return target.status().WithContext(in_);
    size = zip_.Find(*target)->size;
  }
  const bool leaves = by_digest_ ? options_.urls.count(me->sha256) != 0 : size >= options_.min_size;
  if (!leaves || MustStay(e.name)) {
    Status s = copier_.Copy(e.name);
    if (!s.ok()) return s.WithContext(in_);
    return Status::Ok();
  }
  if (!by_digest_ && written_.insert(me->sha256).second) {
    CARTON_RETURN_IF_ERROR(WriteBlob(e, me->sha256, size));
  } else {
    count_(size);  // nothing to write: linked by digest, or written already
  }
  CARTON_RETURN_IF_ERROR(AddUrls(e.name, me->sha256));
  report_.moved.push_back(e.name);
  report_.moved_bytes += size;
  return Status::Ok();
}

Status Shrinker::WriteBlob(const ZipEntry& e, const manifest::Digest& digest, std::uint64_t size) {
  const std::string hex = manifest::ToHex(digest);
  const std::string blob = options_.blobs_dir + "/" + hex;
  const bool reused = HasBlob(blob, digest);
  if (!reused) {
    Status s = reader_.ExtractTo(e.name, blob, count_);
    if (!s.ok()) return s.WithContext(in_);
    ++report_.blobs_written;
  } else {
    count_(size);
  }
  for (BlobEncoding enc : options_.encodings) {
    const std::string copy = blob + std::string(BlobEncodingSuffix(enc));
    struct stat st {};
    if (reused && ::stat(copy.c_str(), &st) == 0) continue;
    CARTON_RETURN_IF_ERROR(internal::WriteEncodedCopy(blob, copy, enc));
  }
  return Status::Ok();
}

Status Shrinker::AddUrls(const std::string& name, const manifest::Digest& digest) {
  std::vector<std::string> add;
  if (by_digest_) {
    add = options_.urls.at(digest);
  } else {
    CARTON_ASSIGN_OR_RETURN(std::string url, BlobUrl(options_.url_prefix, digest));
    add.push_back(std::move(url));
  }
  auto& urls = new_links_.urls[digest];
  for (std::string& url : add) {
    if (std::find(urls.begin(), urls.end(), url) != urls.end()) continue;
    if (urls.size() >= links::kMaxUrlsPerHash) {
      return InvalidArgument(name + ": LINKS already lists " + std::to_string(urls.size()) +
                             " urls for its sha256, the most allowed");
    }
    urls.push_back(std::move(url));
  }
  return Status::Ok();
}

Status Shrinker::Finish() {
  if (!new_links_.urls.empty()) {
    const std::string text = links::WriteLinks(new_links_);
    // ParseLinks holds every LINKS rule (WriteLinks escapes any text).
    if (auto parsed = links::ParseLinks(text); by_digest_ && !parsed.ok()) {
      return InvalidArgument("LINKS cannot hold these urls: " + parsed.status().message());
    }
    CARTON_RETURN_IF_ERROR(writer_.AddBytes("LINKS", AsBytes(text), Compression::kStored).status());
  }
  CARTON_RETURN_IF_ERROR(
      writer_.AddBytes("MANIFEST", AsBytes(m_.text), Compression::kStored).status());
  return writer_.Finish();
}

}  // namespace

Result<ShrinkReport> Shrink(CartonSource& source, const std::string& out_path,
                            const ShrinkOptions& options) {
  const std::string& in = source.location().text();
  CARTON_RETURN_IF_ERROR(CheckOutputPath(out_path, "the .carton"));
  if (options.urls.empty()) CARTON_RETURN_IF_ERROR(PrepareBlobsDir(options));

  const std::string out_dir = DirOf(out_path);
  CARTON_ASSIGN_OR_RETURN(CartonReader * opened, source.Reader(ReadScope::kWhole));
  CartonReader& reader = *opened;
  // Files the input already links stay linked: LINKS must cover them.
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ManifestFile& m = reader.manifest_file();
  CARTON_RETURN_IF_ERROR(CheckMovableDigests(m, options, in));

  // Progress: the bytes of the files read, whether they stay in the zip or
  // leave it for the blobs directory.
  std::uint64_t total = ProgressTotal(reader.zip(), m), done = 0;
  const std::function<void(std::uint64_t)> count = [&](std::uint64_t n) {
    if (options.progress) options.progress(done += n, total);
  };
  ZipWriterOptions writer_options = CartonWriterOptions(0);
  if (options.progress) writer_options.on_read = count;
  CARTON_ASSIGN_OR_RETURN(ZipWriter writer, ZipWriter::Create(out_path, writer_options));
  Shrinker shrinker(reader, writer, out_dir, in, options, count);
  CARTON_RETURN_IF_ERROR(shrinker.ShrinkEntries());
  CARTON_RETURN_IF_ERROR(shrinker.Finish());
  return std::move(shrinker.report());
}

}  // namespace carton
