// Private: quoting names and values in safetensors error messages.
#pragma once

#include <string>
#include <string_view>

namespace carton::safetensors::internal {

// `s` in double quotes, as messages show tensor names: tensor "w".
inline std::string Quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

}  // namespace carton::safetensors::internal
