// Private helpers for MANIFEST text: UTF-8 checking and quoting untrusted
// strings for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace carton::manifest::internal {

// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and
// code points past U+10FFFF included), or std::string_view::npos if `s` is
// valid.
std::size_t FindInvalidUtf8(std::string_view s);

// `s` in double quotes, safe to print: control characters, `"` and `\` are
// escaped, and so is every byte >= 0x80 unless `s` is valid UTF-8. Strings
// longer than 200 bytes are cut and end in "...".
std::string Quote(std::string_view s);

}  // namespace carton::manifest::internal
