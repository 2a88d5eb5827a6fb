#include "toml_util.h"

#include <cstdint>
#include <string>

#include "carton/common/toml_screen.h"

namespace carton {
namespace format_internal {

std::string At(std::string_view source, const toml::source_region& where,
               std::string_view message) {
  std::string out(source);
  out += ':';
  out += std::to_string(where.begin.line);
  out += ':';
  out += std::to_string(where.begin.column);
  out += ": ";
  out += message;
  return out;
}

Status CheckKeyDepth(std::string_view text, std::string_view source) {
  return ScreenTomlDottedKeys(text, source, kMaxFormatTomlDottedKeyParts);
}

Result<toml::table> ParseToml(std::string_view text, std::string_view source) {
  CARTON_RETURN_IF_ERROR(CheckKeyDepth(text, source));
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Corrupt(At(source, e.source(), e.description()));
  }
}

}  // namespace format_internal
}  // namespace carton
