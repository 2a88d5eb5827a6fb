// Entry-name rules and how names appear in messages.

#include <cstdio>
#include <string>

#include "carton/common/quote.h"
#include "carton/manifest/manifest.h"
#include "records.h"

namespace carton::zip_internal {

std::optional<std::string> CheckEntryName(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (name.find('\\') != std::string_view::npos) return "contains a backslash";
  if (name.front() == '/') return "is absolute";
  // "C:x" would be a drive path to anyone extracting on Windows.
  if (name.size() >= 2 && name[1] == ':' &&
      ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) {
    return "starts with a drive letter";
  }
  // A trailing '/' marks a directory; every other component must be a real
  // name, so two spellings can never reach the same path.
  std::string_view rest = name.back() == '/' ? name.substr(0, name.size() - 1) : name;
  for (;;) {
    std::size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part.empty()) return "has an empty path component";
    if (part == "..") return "has a \"..\" component";
    if (part == ".") return "has a \".\" component";
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  // The checks above give the precise messages for the common hostile
  // names; the MANIFEST path rules cover the rest (control characters,
  // invalid UTF-8, components that begin or end with a space).
  Status path =
      manifest::ValidateEntryPath(name.back() == '/' ? name.substr(0, name.size() - 1) : name);
  if (!path.ok()) return "breaks the path rules (" + path.message() + ")";
  return std::nullopt;
}

std::string Hex(std::uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

std::string QuoteName(std::string_view name) { return QuoteForMessage(name, kMax16); }

}  // namespace carton::zip_internal
