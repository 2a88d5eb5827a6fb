#include "entry_copy.h"

#include <unistd.h>

#include <random>

#include "carton/manifest/sha256.h"

namespace carton::internal {

EntryCopier::~EntryCopier() {
  for (const auto& path : spooled_) ::unlink(path.c_str());
}

Status EntryCopier::Copy(const std::string& name) {
  const manifest::ManifestEntry* me = from_.manifest().Find(name);
  if (me == nullptr) return NotFound(name + ": not listed in MANIFEST");
  const ZipReader& zip = from_.zip();
  CARTON_ASSIGN_OR_RETURN(std::string source, from_.DataEntry(name));
  const ZipEntry* e = zip.Find(source);
  const auto method = CompressionFromZipMethod(e->method);
  if (!method || e->encrypted) {
    return Unsupported(name + ": compression method " + std::to_string(e->method) +
                       (e->encrypted ? " with encryption" : "") + " cannot be copied");
  }
  // Stored entries of a mapped archive are copied from the mapping.
  if (auto mapped = zip.MappedData(source); mapped.ok()) {
    CARTON_RETURN_IF_ERROR(manifest::CheckDigest(name, manifest::Sha256Of(*mapped), me->sha256));
    return to_.AddBytes(name, *mapped, *method).status();
  }
  if (e->size <= kCopyInMemory) {
    CARTON_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, zip.Read(source));
    CARTON_RETURN_IF_ERROR(manifest::CheckDigest(name, manifest::Sha256Of(bytes), me->sha256));
    return to_.AddBytes(name, bytes, *method).status();
  }
  std::random_device rd;
  const std::string spool =
      spool_dir_ + "/.carton-copy-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
  // Registered before it exists, so that an interrupt removes it.
  spooled_.push_back(spool);
  registrations_.emplace_back(spool, TemporaryKind::kFile);
  CARTON_RETURN_IF_ERROR(from_.ExtractTo(name, spool));
  return to_.AddFile(name, spool, *method).status();
}

}  // namespace carton::internal
