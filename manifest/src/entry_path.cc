// The path rules shared by MANIFEST lines and zip entry names
// (FORMAT.md, section Paths).
#include <string>

#include "carton/common/quote.h"
#include "carton/common/utf8.h"
#include "carton/manifest/manifest.h"

namespace carton::manifest {

namespace {

Status Bad(std::string_view path, std::string problem) {
  return InvalidArgument("path " + QuoteForMessage(path) + ": " + problem);
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

std::string HexByte(unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[c >> 4] + kHex[c & 15];
}

Status ValidateComponent(std::string_view path, std::string_view component) {
  if (component.empty()) return Bad(path, "empty component (\"//\")");
  if (component.size() > kMaxComponentBytes) {
    return Bad(path, "a component of " + std::to_string(component.size()) +
                         " bytes, more than the limit of " + std::to_string(kMaxComponentBytes) +
                         " (no file system stores a longer name)");
  }
  if (component == "." || component == "..") {
    return Bad(path, "component " + QuoteForMessage(component) + " is not allowed");
  }
  if (component.front() == ' ' || component.back() == ' ') {
    return Bad(path, "component " + QuoteForMessage(component) + " begins or ends with a space");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateEntryPath(std::string_view path) {
  if (path.empty()) return InvalidArgument("empty path");
  if (path.size() > kMaxPathBytes) {
    return Bad(path, std::to_string(path.size()) + " bytes, more than the limit of " +
                         std::to_string(kMaxPathBytes) + " (so that every carton unpacks)");
  }
  for (std::size_t i = 0; i < path.size(); ++i) {
    auto c = static_cast<unsigned char>(path[i]);
    if (IsControl(c)) {
      return Bad(path, "control character " + HexByte(c) + " at byte " + std::to_string(i));
    }
    if (c == '\\') {
      return Bad(path, "backslash at byte " + std::to_string(i) + " (the separator is \"/\")");
    }
  }
  if (std::size_t bad = FindInvalidUtf8(path); bad != std::string_view::npos) {
    return Bad(path, "not valid utf-8 at byte " + std::to_string(bad));
  }
  if (path.front() == '/') return Bad(path, "begins with \"/\" (paths are relative)");
  if (path.back() == '/') return Bad(path, "ends with \"/\"");
  std::size_t begin = 0;
  for (;;) {
    std::size_t slash = path.find('/', begin);
    std::string_view component = path.substr(begin, slash - begin);
    CARTON_RETURN_IF_ERROR(ValidateComponent(path, component));
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  return Status::Ok();
}

bool IsReservedPath(std::string_view path) { return path == kManifestPath || path == kLinksPath; }

}  // namespace carton::manifest
