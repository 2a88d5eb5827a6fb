#include "entry_copy.h"

#include <unistd.h>

#include <random>

#include "archive.h"
#include "carton/carton/symlink.h"
#include "carton/common/atomic_file.h"
#include "carton/manifest/sha256.h"

namespace carton::internal {
namespace {

Status Mismatch(const std::string& name, const manifest::Digest& got,
                const manifest::Digest& expected) {
  return Corrupt(name + ": sha256 " + manifest::ToHex(got) + " but MANIFEST says " +
                 manifest::ToHex(expected));
}

}  // namespace

EntryCopier::~EntryCopier() {
  for (const auto& path : spooled_) ::unlink(path.c_str());
}

Result<std::string> EntryCopier::DataEntry(const std::string& name) const {
  const ZipEntry* e = from_.Find(name);
  if (e == nullptr) return NotFound(name + ": not in the archive");
  if (!e->is_symlink) return name;
  return ResolveSymlinkEntry(from_, *e);
}

Status EntryCopier::Extract(const std::string& name, const manifest::Digest& expected,
                            const std::string& dest) const {
  CARTON_ASSIGN_OR_RETURN(std::string source, DataEntry(name));
  CARTON_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(dest));
  manifest::Sha256 h;
  CARTON_RETURN_IF_ERROR(from_.ReadTo(source, [&](ByteView chunk) {
    h.Update(chunk);
    return file.Write(chunk);
  }));
  const manifest::Digest got = h.Finish();
  if (got != expected) return Mismatch(name, got, expected);
  return file.Commit();
}

Status EntryCopier::Copy(const std::string& name, const manifest::Digest& expected) {
  CARTON_ASSIGN_OR_RETURN(std::string source, DataEntry(name));
  const ZipEntry* e = from_.Find(source);
  const auto method = CompressionFromZipMethod(e->method);
  if (!method || e->encrypted) {
    return Unsupported(name + ": compression method " + std::to_string(e->method) +
                       (e->encrypted ? " with encryption" : "") + " cannot be copied");
  }
  // Stored entries of a mapped archive are copied from the mapping.
  if (auto mapped = from_.MappedData(source); mapped.ok()) {
    const manifest::Digest got = manifest::Sha256Of(*mapped);
    if (got != expected) return Mismatch(name, got, expected);
    return to_.AddBytes(name, *mapped, *method).status();
  }
  if (e->size <= kCopyInMemory) {
    CARTON_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, from_.Read(source));
    const manifest::Digest got = manifest::Sha256Of(bytes);
    if (got != expected) return Mismatch(name, got, expected);
    return to_.AddBytes(name, bytes, *method).status();
  }
  std::random_device rd;
  const std::string spool =
      spool_dir_ + "/.carton-copy-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  CARTON_RETURN_IF_ERROR(Extract(name, expected, spool));
  spooled_.push_back(spool);
  return to_.AddFile(name, spool, *method).status();
}

Result<ManifestCopy> ReadManifestForCopy(const ZipReader& zip) {
  auto text = ReadTextEntry(zip, "MANIFEST");
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return Corrupt("MANIFEST: missing");
    return text.status();
  }
  auto m = manifest::Manifest::Parse(AsBytes(*text));
  if (!m.ok()) return m.status();
  for (const auto& e : zip.entries()) {
    if (e.is_symlink) CARTON_RETURN_IF_ERROR(ResolveSymlinkEntry(zip, e, &*m).status());
    if (e.is_dir || manifest::IsReservedPath(e.name)) continue;
    if (m->Find(e.name) == nullptr) {
      return Corrupt(e.name + ": in the archive but not listed in MANIFEST");
    }
  }
  return ManifestCopy{std::move(text).value(), std::move(m).value()};
}

}  // namespace carton::internal
