#include "carton/common/toml_string.h"

namespace carton {

void AppendTomlString(std::string* out, std::string_view s, bool multiline) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const bool use_multiline = multiline && s.find('\n') != std::string_view::npos;
  // The newline right after the opening """ is dropped by readers.
  out->append(use_multiline ? "\"\"\"\n" : "\"");
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
        out->append(use_multiline ? "\n" : "\\n");
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
  out->append(use_multiline ? "\"\"\"" : "\"");
}

}  // namespace carton
