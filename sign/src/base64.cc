#include "base64.h"

#include <array>
#include <cstdint>

namespace carton::sign::internal {
namespace {

constexpr char kStandard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The value of each byte in either alphabet (-1: none); '+' and '/' are
// standard, '-' and '_' URL-safe, and a text must not mix the two.
struct Alphabet {
  std::array<std::int8_t, 256> value{};
  Alphabet() {
    value.fill(-1);
    for (int i = 0; i < 64; ++i)
      value[static_cast<unsigned char>(kStandard[i])] = static_cast<std::int8_t>(i);
    value['-'] = 62;
    value['_'] = 63;
  }
};

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
  static const Alphabet kAlphabet;
  const bool standard = body.find_first_of("+/") != std::string_view::npos;
  const bool url = body.find_first_of("-_") != std::string_view::npos;
  if (standard && url) return std::nullopt;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : body) {
    const int v = kAlphabet.value[static_cast<unsigned char>(c)];
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
