#include "text.h"

#include "carton/common/utf8.h"

namespace carton::manifest::internal {

namespace {

constexpr std::size_t kMaxQuotedBytes = 200;

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::string Quote(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  const bool utf8 = FindInvalidUtf8(s) == std::string_view::npos;
  bool cut = false;
  if (s.size() > kMaxQuotedBytes) {
    std::size_t n = kMaxQuotedBytes;
    // Do not split a UTF-8 sequence that will be printed as is.
    while (utf8 && n > 0 && IsContinuation(static_cast<unsigned char>(s[n]))) --n;
    s = s.substr(0, n);
    cut = true;
  }
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !utf8)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  out += cut ? "\"..." : "\"";
  return out;
}

}  // namespace carton::manifest::internal
