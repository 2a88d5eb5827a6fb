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

// The kCorrupt error for symlink entry `link` breaking a rule.
Status Bad(const ZipEntry& link, const std::string& why) {
  return Corrupt(link.name + ": symlink " + why);
}

// The rules on the symlink entry itself: where it is, how it is stored,
// how large its data is.
Status CheckLinkEntry(const ZipEntry& link) {
  if (link.name.rfind(kModelPrefix, 0) != 0) {
    return Bad(link, "entries are allowed only under model/");
  }
  if (link.encrypted) return Bad(link, "entry is encrypted");
  if (!CompressionFromZipMethod(link.method)) {
    return Unsupported(link.name + ": compression method " + std::to_string(link.method) +
                       " is not stored, deflate or zstd");
  }
  if (link.size > kMaxSymlinkTargetSize) {
    return Bad(link, "target takes " + std::to_string(link.size) + " bytes, over the limit of " +
                         std::to_string(kMaxSymlinkTargetSize));
  }
  return Status::Ok();
}

// The entry's data, the target's text, read up to kMaxSymlinkTargetSize.
Result<std::string> ReadTarget(const ZipReader& zip, const ZipEntry& link) {
  std::string target;
  CARTON_RETURN_IF_ERROR(zip.ReadTo(link.name, [&](ByteView chunk) {
    if (chunk.size() > kMaxSymlinkTargetSize - target.size()) {
      return Bad(link, "target is longer than the limit of " +
                           std::to_string(kMaxSymlinkTargetSize) + " bytes");
    }
    target.append(AsChars(chunk));
    return Status::Ok();
  }));
  return target;
}

// The entry `target` names, resolved lexically against the link's
// directory; `shown` is the target as errors quote it.
Result<std::string> ResolveLexically(const ZipEntry& link, const std::string& target,
                                     const std::string& shown) {
  // Resolve lexically against the link's directory; the root is model/.
  std::vector<std::string_view> parts = Split(link.name);
  parts.pop_back();  // the link's own name
  for (std::string_view p : Split(target)) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      if (parts.size() <= 1) return Bad(link, shown + " leaves model/");
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
  if (parts.size() <= 1) return Bad(link, shown + " names model/ itself, a directory");
  return resolved;
}

// The resolved target must be a file entry of the zip and, when `m` lists
// both, carry the link's sha256.
Status CheckTargetEntry(const ZipReader& zip, const ZipEntry& link, const std::string& resolved,
                        const std::string& shown, const manifest::Manifest* m) {
  const ZipEntry* t = zip.Find(resolved);
  if (t == nullptr) {
    if (HasEntriesUnder(zip, resolved)) return Bad(link, shown + " names a directory");
    return Bad(link, shown + " names " + resolved + ", which is not in the archive");
  }
  if (t->is_dir) return Bad(link, shown + " names a directory");
  if (t->is_symlink) return Bad(link, shown + " names another symlink");
  if (m != nullptr) {
    const manifest::ManifestEntry* ml = m->Find(link.name);
    const manifest::ManifestEntry* mt = m->Find(resolved);
    if (ml != nullptr && mt != nullptr && ml->sha256 != mt->sha256) {
      return Bad(link, "has sha256 " + manifest::ToHex(ml->sha256) +
                           " in MANIFEST but its target " + resolved + " has " +
                           manifest::ToHex(mt->sha256));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ResolveSymlinkEntry(const ZipReader& zip, const ZipEntry& link,
                                        const manifest::Manifest* m) {
  CARTON_RETURN_IF_ERROR(CheckLinkEntry(link));
  CARTON_ASSIGN_OR_RETURN(std::string target, ReadTarget(zip, link));
  if (target.empty()) return Bad(link, "target is empty");
  if (target.find('\0') != std::string::npos) return Bad(link, "target contains a NUL byte");
  const std::string shown = "target " + QuoteForMessage(target);
  if (target.find('\\') != std::string::npos) return Bad(link, shown + " contains a backslash");
  if (target.front() == '/') return Bad(link, shown + " is absolute");
  CARTON_ASSIGN_OR_RETURN(std::string resolved, ResolveLexically(link, target, shown));
  CARTON_RETURN_IF_ERROR(CheckTargetEntry(zip, link, resolved, shown, m));
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
