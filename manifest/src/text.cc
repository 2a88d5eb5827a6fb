#include "text.h"

namespace carton::manifest::internal {

namespace {

constexpr std::size_t kMaxQuotedBytes = 200;

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::size_t FindInvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Length of the sequence and the allowed range of its second byte
    // (narrower than 0x80-0xBF where overlong forms, surrogates or code
    // points past U+10FFFF would otherwise slip through).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (s.size() - i < len) return i;
    auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (!IsContinuation(static_cast<unsigned char>(s[i + k]))) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

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
