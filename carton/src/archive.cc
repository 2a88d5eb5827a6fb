#include "archive.h"


namespace carton::internal {

Result<std::string> ReadTextEntry(const ZipReader& zip, std::string_view name,
                                  std::uint64_t limit) {
  const ZipEntry* e = zip.Find(name);
  if (e == nullptr) return NotFound(std::string(name) + ": missing from the archive");
  if (e->size > limit) {
    return Corrupt(std::string(name) + ": " + std::to_string(e->size) +
                   " bytes, over the limit of " + std::to_string(limit));
  }
  std::string out;
  out.reserve(e->size);
  CARTON_RETURN_IF_ERROR(zip.ReadTo(name, [&](ByteView chunk) {
    out.append(AsChars(chunk));
    return Status::Ok();
  }));
  return out;
}

}  // namespace carton::internal
