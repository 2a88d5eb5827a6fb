#include <vector>

#include "carton/carton/symlink.h"
#include "carton/common/quote.h"
#include "carton/manifest/sha256.h"

namespace carton {
namespace {

constexpr std::string_view kModelPrefix = "model/";

std::vector<std::string_view> Split(std::string_view s) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t slash = s.find('/');
    parts.push_back(s.substr(0, slash));
    if (slash == std::string_view::npos) return parts;
    s.remove_prefix(slash + 1);
  }
}

bool HasEntriesUnder(const ZipReader& zip, const std::string& dir) {
  const std::string prefix = dir + "/";
  for (const auto& e : zip.entries()) {
    if (e.name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

Result<std::string> ResolveSymlinkEntry(const ZipReader& zip, const ZipEntry& link,
                                        const manifest::Manifest* m) {
  auto bad = [&](const std::string& why) { return Corrupt(link.name + ": symlink " + why); };
  if (link.name.rfind(kModelPrefix, 0) != 0) {
    return bad("entries are allowed only under model/");
  }
  if (link.encrypted) return bad("entry is encrypted");
  if (!CompressionFromZipMethod(link.method)) {
    return Unsupported(link.name + ": compression method " + std::to_string(link.method) +
                       " is not stored, deflate or zstd");
  }
  if (link.size > kMaxSymlinkTargetSize) {
    return bad("target takes " + std::to_string(link.size) + " bytes, over the limit of " +
               std::to_string(kMaxSymlinkTargetSize));
  }
  std::string target;
  CARTON_RETURN_IF_ERROR(zip.ReadTo(link.name, [&](ByteView chunk) {
    if (chunk.size() > kMaxSymlinkTargetSize - target.size()) {
      return bad("target is longer than the limit of " + std::to_string(kMaxSymlinkTargetSize) +
                 " bytes");
    }
    target.append(AsChars(chunk));
    return Status::Ok();
  }));
  if (target.empty()) return bad("target is empty");
  if (target.find('\0') != std::string::npos) return bad("target contains a NUL byte");
  const std::string shown = "target " + QuoteForMessage(target);
  if (target.find('\\') != std::string::npos) return bad(shown + " contains a backslash");
  if (target.front() == '/') return bad(shown + " is absolute");

  // Resolve lexically against the link's directory; the root is model/.
  std::vector<std::string_view> parts = Split(link.name);
  parts.pop_back();  // the link's own name
  for (std::string_view p : Split(target)) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      if (parts.size() <= 1) return bad(shown + " leaves model/");
      parts.pop_back();
      continue;
    }
    parts.push_back(p);
  }
  std::string resolved;
  for (std::string_view p : parts) {
    if (!resolved.empty()) resolved += '/';
    resolved.append(p);
  }
  if (parts.size() <= 1) return bad(shown + " names model/ itself, a directory");
  const ZipEntry* t = zip.Find(resolved);
  if (t == nullptr) {
    if (HasEntriesUnder(zip, resolved)) return bad(shown + " names a directory");
    return bad(shown + " names " + resolved + ", which is not in the archive");
  }
  if (t->is_dir) return bad(shown + " names a directory");
  if (t->is_symlink) return bad(shown + " names another symlink");
  if (m != nullptr) {
    const manifest::ManifestEntry* ml = m->Find(link.name);
    const manifest::ManifestEntry* mt = m->Find(resolved);
    if (ml != nullptr && mt != nullptr && ml->sha256 != mt->sha256) {
      return bad("has sha256 " + manifest::ToHex(ml->sha256) + " in MANIFEST but its target " +
                 resolved + " has " + manifest::ToHex(mt->sha256));
    }
  }
  return resolved;
}

std::string SymlinkPathOnDisk(std::string_view link, std::string_view target) {
  std::vector<std::string_view> from = Split(link);
  from.pop_back();
  std::vector<std::string_view> to = Split(target);
  std::size_t common = 0;
  while (common < from.size() && common + 1 < to.size() && from[common] == to[common]) ++common;
  std::string out;
  for (std::size_t i = common; i < from.size(); ++i) out += "../";
  for (std::size_t i = common; i < to.size(); ++i) {
    out.append(to[i]);
    if (i + 1 < to.size()) out += '/';
  }
  return out;
}

}  // namespace carton
