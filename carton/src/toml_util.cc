#include "toml_util.h"

#include <cstdint>
#include <string>

#include "carton/common/toml_screen.h"
#include "tensor_data_internal.h"

namespace carton {
namespace toml_util {

void AppendTomlString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out->push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        // TOML forbids raw control characters and DEL in basic strings.
        if (c < 0x20 || c == 0x7F) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

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
  return ScreenTomlDottedKeys(text, source, kMaxDottedKeyParts);
}

Result<toml::table> ParseToml(std::string_view text, std::string_view source) {
  CARTON_RETURN_IF_ERROR(CheckKeyDepth(text, source));
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Corrupt(At(source, e.source(), e.description()));
  }
}

}  // namespace toml_util
}  // namespace carton
