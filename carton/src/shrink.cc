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

}  // namespace

Result<ShrinkReport> Shrink(const Location& in_at, const std::string& out_path,
                            const ShrinkOptions& options) {
  const std::string& in = in_at.text();
  CARTON_RETURN_IF_ERROR(CheckOutputPath(out_path, "the .carton"));
  const bool by_digest = !options.urls.empty();
  if (!by_digest) {
    if (options.url_prefix.empty()) return InvalidArgument("a url prefix is required");
    if (options.blobs_dir.empty()) return InvalidArgument("a blobs directory is required");
    CARTON_RETURN_IF_ERROR(BlobUrl(options.url_prefix, manifest::Digest{}).status());
    std::error_code ec;
    fs::create_directories(options.blobs_dir, ec);
    if (ec) return IoError(options.blobs_dir + ": cannot create: " + ec.message());
  }

  const std::string out_dir = DirOf(out_path);
  CARTON_ASSIGN_OR_RETURN(CartonReader reader,
                          CartonReader::OpenLocal(in_at, out_dir, options.link));
  // Files the input already links stay linked: LINKS must cover them.
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ZipReader& zip = reader.zip();
  const ManifestFile& m = reader.manifest_file();
  links::Links new_links = reader.links().value_or(links::Links{});
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

  // Progress: the bytes of the files read, whether they stay in the zip or
  // leave it for the blobs directory.
  std::uint64_t total = m.text.size(), done = 0;
  for (const auto& me : m.manifest.entries()) {
    if (const ZipEntry* e = zip.Find(me.path)) total += e->size;
  }
  const std::function<void(std::uint64_t)> count = [&](std::uint64_t n) {
    if (options.progress) options.progress(done += n, total);
  };
  ZipWriterOptions writer_options = CartonWriterOptions(0);
  if (options.progress) writer_options.on_read = count;
  CARTON_ASSIGN_OR_RETURN(ZipWriter writer, ZipWriter::Create(out_path, writer_options));
  internal::EntryCopier copier(reader, writer, out_dir);
  ShrinkReport report;
  report.manifest_hash = m.hash;
  std::set<manifest::Digest> written;
  for (const ZipEntry& e : zip.entries()) {
    if (e.is_dir) {
      CARTON_RETURN_IF_ERROR(writer.AddDirectory(e.name));
      continue;
    }
    if (manifest::IsReservedPath(e.name)) continue;  // LINKS and MANIFEST come last
    const manifest::ManifestEntry* me = m.manifest.Find(e.name);
    // A symlink entry stands for its target's bytes (EntryCopier).
    std::uint64_t size = e.size;
    if (e.is_symlink) {
      auto target = ResolveSymlinkEntry(zip, e);
      if (!target.ok()) return target.status().WithContext(in);
      size = zip.Find(*target)->size;
    }
    const bool leaves = by_digest ? options.urls.count(me->sha256) != 0 : size >= options.min_size;
    if (!leaves || MustStay(e.name)) {
      Status s = copier.Copy(e.name);
      if (!s.ok()) return s.WithContext(in);
      continue;
    }
    const std::string hex = manifest::ToHex(me->sha256);
    const std::string blob = options.blobs_dir + "/" + hex;
    if (!by_digest && written.insert(me->sha256).second) {
      const bool reused = HasBlob(blob, me->sha256);
      if (!reused) {
        Status s = reader.ExtractTo(e.name, blob, count);
        if (!s.ok()) return s.WithContext(in);
        ++report.blobs_written;
      } else {
        count(size);
      }
      for (BlobEncoding enc : options.encodings) {
        const std::string copy = blob + std::string(BlobEncodingSuffix(enc));
        struct stat st {};
        if (reused && ::stat(copy.c_str(), &st) == 0) continue;
        CARTON_RETURN_IF_ERROR(internal::WriteEncodedCopy(blob, copy, enc));
      }
    } else {
      count(size);  // nothing to write: linked by digest, or written already
    }
    std::vector<std::string> add;
    if (by_digest) {
      add = options.urls.at(me->sha256);
    } else {
      CARTON_ASSIGN_OR_RETURN(std::string url, BlobUrl(options.url_prefix, me->sha256));
      add.push_back(std::move(url));
    }
    auto& urls = new_links.urls[me->sha256];
    for (std::string& url : add) {
      if (std::find(urls.begin(), urls.end(), url) != urls.end()) continue;
      if (urls.size() >= links::kMaxUrlsPerHash) {
        return InvalidArgument(e.name + ": LINKS already lists " + std::to_string(urls.size()) +
                               " urls for its sha256, the most allowed");
      }
      urls.push_back(std::move(url));
    }
    report.moved.push_back(e.name);
    report.moved_bytes += size;
  }
  if (!new_links.urls.empty()) {
    const std::string text = links::WriteLinks(new_links);
    // ParseLinks holds every LINKS rule (WriteLinks escapes any text).
    if (auto parsed = links::ParseLinks(text); by_digest && !parsed.ok()) {
      return InvalidArgument("LINKS cannot hold these urls: " + parsed.status().message());
    }
    CARTON_RETURN_IF_ERROR(writer.AddBytes("LINKS", AsBytes(text), Compression::kStored).status());
  }
  CARTON_RETURN_IF_ERROR(
      writer.AddBytes("MANIFEST", AsBytes(m.text), Compression::kStored).status());
  CARTON_RETURN_IF_ERROR(writer.Finish());
  return report;
}

}  // namespace carton
