#include "carton/carton/listing.h"

#include <algorithm>

#include "carton/common/mapped_file.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/compression.h"

namespace carton {
namespace {

Result<CartonReader*> OpenChecked(CartonSource& source) {
  CARTON_ASSIGN_OR_RETURN(CartonReader * reader, source.Reader(ReadScope::kEntries));
  CARTON_RETURN_IF_ERROR(reader->Check());
  return reader;
}

const LinkedFile* FindLinked(const CartonReader& reader, const std::string& path) {
  for (const auto& f : reader.linked_files()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<CartonEntry>> ListEntries(CartonSource& source) {
  const std::string& location = source.location().text();
  CARTON_ASSIGN_OR_RETURN(CartonReader * checked, OpenChecked(source));
  const CartonReader& reader = *checked;
  const ZipReader& zip = reader.zip();
  std::vector<CartonEntry> out;
  for (const auto& me : reader.manifest().entries()) {
    CartonEntry e;
    e.path = me.path;
    e.sha256 = me.sha256;
    const ZipEntry* z = zip.Find(me.path);
    if (z == nullptr) {
      e.linked = true;
      if (const LinkedFile* l = FindLinked(reader, me.path)) e.urls = l->urls;
      out.push_back(std::move(e));
      continue;
    }
    if (z->is_symlink) {
      // Check() resolved every symlink entry already.
      CARTON_ASSIGN_OR_RETURN(std::string target, reader.DataEntry(me.path));
      e.symlink_target = target;
      z = zip.Find(target);
      if (z == nullptr) return Internal(location + ": " + me.path + ": target vanished");
    }
    e.size = z->size;
    e.compressed_size = z->compressed_size;
    auto c = CompressionFromZipMethod(z->method);
    e.method = c ? std::string(CompressionName(*c)) : "method " + std::to_string(z->method);
    out.push_back(std::move(e));
  }
  return out;
}

Status ReadCartonFile(CartonSource& source, const std::string& path,
                      const std::function<Status(ByteView)>& sink) {
  const std::string& location = source.location().text();
  CARTON_ASSIGN_OR_RETURN(CartonReader * checked, OpenChecked(source));
  const CartonReader& reader = *checked;
  // MANIFEST's bytes are what the manifest hash covers: given as read.
  if (path == manifest::kManifestPath) return sink(AsBytes(reader.manifest_file().text));
  const manifest::ManifestEntry* me = reader.manifest().Find(path);
  if (me == nullptr) return NotFound(location + ": " + path + ": not in MANIFEST");
  manifest::Sha256 h;
  auto hashing_sink = [&](ByteView chunk) {
    h.Update(chunk);
    return sink(chunk);
  };
  if (const LinkedFile* linked = FindLinked(reader, path)) {
    auto cached = ResolveLinkedFile(*linked, source.environment(), /*rehash=*/true);
    if (!cached.ok()) return cached.status().WithContext(location + ": " + path);
    CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(*cached));
    CARTON_RETURN_IF_ERROR(ForEachMappedStep(file.bytes(), hashing_sink));
  } else {
    auto entry = reader.DataEntry(path);
    if (!entry.ok()) return entry.status().WithContext(location);
    // The zip reader's errors name the carton already.
    CARTON_RETURN_IF_ERROR(reader.zip().ReadTo(*entry, hashing_sink));
  }
  return manifest::CheckDigest(location + ": " + path, h.Finish(), me->sha256);
}

CartonDiff DiffManifests(const manifest::Manifest& a, const manifest::Manifest& b) {
  CartonDiff d;
  d.a_hash = a.Hash();
  d.b_hash = b.Hash();
  for (const auto& e : a.entries()) {
    const manifest::ManifestEntry* other = b.Find(e.path);
    if (other == nullptr) {
      d.removed.push_back(e);
    } else if (other->sha256 != e.sha256) {
      d.changed.push_back({e.path, e.sha256, other->sha256});
    }
  }
  for (const auto& e : b.entries()) {
    if (a.Find(e.path) == nullptr) d.added.push_back(e);
  }
  auto by_path = [](const auto& x, const auto& y) { return x.path < y.path; };
  std::sort(d.added.begin(), d.added.end(), by_path);
  std::sort(d.removed.begin(), d.removed.end(), by_path);
  std::sort(d.changed.begin(), d.changed.end(), by_path);
  return d;
}

Result<CartonDiff> DiffCartons(CartonSource& a, CartonSource& b) {
  CARTON_ASSIGN_OR_RETURN(CartonReader * ra, OpenChecked(a));
  CARTON_ASSIGN_OR_RETURN(CartonReader * rb, OpenChecked(b));
  CartonDiff d = DiffManifests(ra->manifest(), rb->manifest());
  // The hashes of the bytes as stored, which is what `carton hash` prints.
  d.a_hash = ra->manifest_file().hash;
  d.b_hash = rb->manifest_file().hash;
  return d;
}

}  // namespace carton
