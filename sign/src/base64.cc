#include "base64.h"

#include <array>
#include <cstdint>

namespace carton::sign::internal {
namespace {

constexpr char kStandard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of `c` in either alphabet, or -1. A text must not mix them:
// `alphabet` records which one it uses ('+' or '-' seen).
int Value(char c, char* alphabet) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  const bool url = c == '-' || c == '_';
  const bool standard = c == '+' || c == '/';
  if (!url && !standard) return -1;
  const char kind = url ? 'u' : 's';
  if (*alphabet != 0 && *alphabet != kind) return -1;
  *alphabet = kind;
  return (c == '+' || c == '-') ? 62 : 63;
}

}  // namespace

std::string Base64Encode(ByteView bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::to_integer<std::uint32_t>(bytes[i]) << 16) |
                            (std::to_integer<std::uint32_t>(bytes[i + 1]) << 8) |
                            std::to_integer<std::uint32_t>(bytes[i + 2]);
    out += kStandard[(v >> 18) & 63];
    out += kStandard[(v >> 12) & 63];
    out += kStandard[(v >> 6) & 63];
    out += kStandard[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = std::to_integer<std::uint32_t>(bytes[i]) << 16;
    if (rest == 2) v |= std::to_integer<std::uint32_t>(bytes[i + 1]) << 8;
    out += kStandard[(v >> 18) & 63];
    out += kStandard[(v >> 12) & 63];
    out += rest == 2 ? kStandard[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::vector<std::byte>> Base64Decode(std::string_view text) {
  std::size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  if (pad > 0 && text.size() % 4 != 0) return std::nullopt;
  const std::string_view body = text.substr(0, text.size() - pad);
  if (body.size() % 4 == 1) return std::nullopt;
  std::vector<std::byte> out;
  out.reserve(body.size() / 4 * 3 + 2);
  char alphabet = 0;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : body) {
    const int v = Value(c, &alphabet);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::byte>((acc >> bits) & 0xFF));
    }
  }
  // What is left must be the zero bits of the last character.
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace carton::sign::internal
