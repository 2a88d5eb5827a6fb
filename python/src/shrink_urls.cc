#include "shrink_urls.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "carton/carton/links.h"
#include "carton/carton/symlink.h"
#include "carton/zip/reader.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"

namespace carton::python {
namespace {

namespace fs = std::filesystem;

// As carton::Shrink: the metadata `carton info` reads stays in the zip.
bool MustStay(std::string_view path) {
  return path == "carton.toml" || path == "tensor_data/index.toml";
}

// The ZipWriter settings of the library's carton writers (pack, shrink):
// 64-byte aligned stored entries, zstd through at most 4 workers.
ZipWriterOptions WriterOptions() {
  ZipWriterOptions options;
  options.zstd_workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  return options;
}

// Copies entry `name` (whose bytes are those of entry `data`: itself, or a
// symlink's target) with its own compression method, checking its sha256.
Status CopyEntry(const ZipReader& zip, ZipWriter& writer, const std::string& name,
                 const std::string& data, const manifest::Digest& expected) {
  const ZipEntry* e = zip.Find(data);
  if (e == nullptr) return Corrupt(name + ": missing from the archive");
  auto method = CompressionFromZipMethod(e->method);
  if (!method || e->encrypted) {
    return Unsupported(name + ": compression method " + std::to_string(e->method) +
                       (e->encrypted ? " (encrypted)" : ""));
  }
  ZipAddOptions add;
  add.sha256 = true;
  Result<ZipAddResult> added = InvalidArgument("unreached");
  if (*method == Compression::kStored) {
    CARTON_ASSIGN_OR_RETURN(ByteView bytes, zip.MappedData(data));
    added = writer.AddBytes(name, bytes, Compression::kStored, 0, add);
  } else {
    // Compressed entries are decoded whole (ZipReader::Read checks size
    // and CRC-32, within the reader's max_read_size) and compressed again.
    CARTON_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, zip.Read(data));
    added = writer.AddBytes(name, bytes, *method, 0, add);
  }
  if (!added.ok()) return added.status();
  if (added->sha256 != expected) {
    return Corrupt(name + ": sha256 " + manifest::ToHex(*added->sha256) +
                   " does not match MANIFEST (" + manifest::ToHex(expected) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<ShrinkToUrlsReport> ShrinkToUrls(
    const std::string& in, const std::string& out_path,
    const std::map<manifest::Digest, std::vector<std::string>>& urls) {
  fs::path parent = fs::path(out_path).parent_path();
  const std::string out_dir = parent.empty() ? "." : parent.string();
  CARTON_ASSIGN_OR_RETURN(LocalCarton local, LocalCarton::Make(in, out_dir));
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Open(local.path()));
  auto manifest_bytes = zip.Read("MANIFEST");
  if (!manifest_bytes.ok()) {
    if (manifest_bytes.status().code() == StatusCode::kNotFound) {
      return Corrupt(in + ": MANIFEST: missing");
    }
    return manifest_bytes.status().WithContext(in);
  }
  auto m = manifest::Manifest::Parse(*manifest_bytes);
  if (!m.ok()) return m.status().WithContext(in);
  for (const ZipEntry& e : zip.entries()) {
    if (e.is_symlink) {
      auto target = ResolveSymlinkEntry(zip, e, &*m);
      if (!target.ok()) return target.status().WithContext(in);
    }
    if (e.is_dir || manifest::IsReservedPath(e.name)) continue;
    if (m->Find(e.name) == nullptr) {
      return Corrupt(in + ": " + e.name + ": in the archive but not listed in MANIFEST");
    }
  }
  auto old_links = ReadLinks(zip);
  if (!old_links.ok()) return old_links.status().WithContext(in);
  if (auto linked = LinkedFiles(zip, *m, *old_links); !linked.ok()) {
    return linked.status().WithContext(in);
  }

  // Each sha256 must name a file, and the merged LINKS must be valid.
  links::Links new_links = old_links->value_or(links::Links{});
  for (const auto& [digest, list] : urls) {
    const bool movable = std::any_of(m->entries().begin(), m->entries().end(), [&](const auto& e) {
      return e.sha256 == digest && !MustStay(e.path);
    });
    if (!movable) {
      return InvalidArgument("sha256 " + manifest::ToHex(digest) + " names no file of " + in +
                             " that can leave its zip (carton.toml and tensor_data/index.toml "
                             "always stay)");
    }
    auto& merged = new_links.urls[digest];
    for (const std::string& url : list) {
      if (std::find(merged.begin(), merged.end(), url) == merged.end()) merged.push_back(url);
    }
  }
  // ParseLinks holds every LINKS rule (WriteLinks escapes any text).
  if (auto parsed = links::ParseLinks(links::WriteLinks(new_links)); !parsed.ok()) {
    return InvalidArgument("LINKS cannot hold these urls: " + parsed.status().message());
  }

  CARTON_ASSIGN_OR_RETURN(ZipWriter writer, ZipWriter::Create(out_path, WriterOptions()));
  ShrinkToUrlsReport report;
  report.manifest_hash = manifest::Sha256Of(*manifest_bytes);
  for (const ZipEntry& e : zip.entries()) {
    if (e.is_dir) {
      CARTON_RETURN_IF_ERROR(writer.AddDirectory(e.name));
      continue;
    }
    if (manifest::IsReservedPath(e.name)) continue;  // LINKS and MANIFEST come last
    const manifest::ManifestEntry* me = m->Find(e.name);
    if (urls.count(me->sha256) != 0 && !MustStay(e.name)) {
      report.moved.push_back(e.name);
      continue;
    }
    std::string data = e.name;
    if (e.is_symlink) {
      CARTON_ASSIGN_OR_RETURN(data, ResolveSymlinkEntry(zip, e, &*m));
    }
    Status s = CopyEntry(zip, writer, e.name, data, me->sha256);
    if (!s.ok()) return s.WithContext(in);
  }
  if (!new_links.urls.empty()) {
    const std::string text = links::WriteLinks(new_links);
    CARTON_RETURN_IF_ERROR(writer.AddBytes("LINKS", AsBytes(text), Compression::kStored).status());
  }
  CARTON_RETURN_IF_ERROR(
      writer.AddBytes("MANIFEST", *manifest_bytes, Compression::kStored).status());
  CARTON_RETURN_IF_ERROR(writer.Finish());
  return report;
}

}  // namespace carton::python
