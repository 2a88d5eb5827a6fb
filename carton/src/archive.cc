#include "archive.h"

#include "carton/carton/symlink.h"

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

std::vector<CartonProblem> CheckEntryRules(const ZipReader& zip, const manifest::Manifest& m) {
  std::vector<CartonProblem> problems;
  for (const auto& e : zip.entries()) {
    if (e.is_symlink) {
      auto target = ResolveSymlinkEntry(zip, e, &m);
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
    if (!e.is_dir && !manifest::IsReservedPath(e.name) && m.Find(e.name) == nullptr) {
      problems.push_back({e.name, "in the archive but not listed in MANIFEST"});
    }
  }
  return problems;
}

Status FirstEntryProblem(const ZipReader& zip, const manifest::Manifest& m) {
  auto problems = CheckEntryRules(zip, m);
  if (problems.empty()) return Status::Ok();
  const CartonProblem& p = problems.front();
  return Status(p.code, p.where + ": " + p.message);
}

}  // namespace carton::internal
