// UTF-8 checks for untrusted strings (names, paths, metadata).
// Thread-safe free functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace carton {

// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and
// code points past U+10FFFF included), or std::string_view::npos if `s` is
// valid.
std::size_t FindInvalidUtf8(std::string_view s);

inline bool IsValidUtf8(std::string_view s) { return FindInvalidUtf8(s) == std::string_view::npos; }

}  // namespace carton
