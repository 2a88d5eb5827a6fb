#include "carton/common/quote.h"

#include "carton/common/utf8.h"

namespace carton {
namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

void AppendHex(std::string* out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += "\\x";
  *out += kHex[c >> 4];
  *out += kHex[c & 15];
}

// Appends `s` with the escapes both functions share; `quote` also escapes
// `"` and `\`, `multiline` keeps newlines and tabs.
void AppendEscaped(std::string* out, std::string_view s, bool utf8, bool quote, bool multiline) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    if (quote && (ch == '"' || ch == '\\')) {
      *out += '\\';
      *out += ch;
    } else if (multiline && (ch == '\n' || ch == '\t')) {
      *out += ch;
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !utf8)) {
      AppendHex(out, c);
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      // U+0080-U+009F: C1 controls (CSI is U+009B).
      AppendHex(out, c);
      AppendHex(out, static_cast<unsigned char>(s[++i]));
    } else {
      *out += ch;
    }
  }
}

}  // namespace

std::string QuoteForMessage(std::string_view s, std::size_t max_bytes) {
  const bool utf8 = IsValidUtf8(s);
  bool cut = false;
  if (s.size() > max_bytes) {
    std::size_t n = max_bytes;
    // Do not split a UTF-8 sequence that will be printed as it is.
    while (utf8 && n > 0 && IsContinuation(static_cast<unsigned char>(s[n]))) --n;
    s = s.substr(0, n);
    cut = true;
  }
  std::string out;
  out.reserve(s.size() + 5);
  out += '"';
  AppendEscaped(&out, s, utf8, /*quote=*/true, /*multiline=*/false);
  out += cut ? "\"..." : "\"";
  return out;
}

std::string ShowText(std::string_view s, bool multiline) {
  std::string out;
  out.reserve(s.size());
  AppendEscaped(&out, s, IsValidUtf8(s), /*quote=*/false, multiline);
  return out;
}

}  // namespace carton
