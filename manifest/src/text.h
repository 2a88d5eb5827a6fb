// Private helpers for MANIFEST text: UTF-8 checking and quoting untrusted
// strings for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "carton/common/utf8.h"

namespace carton::manifest::internal {

using carton::FindInvalidUtf8;

// `s` in double quotes, safe to print: control characters, `"` and `\` are
// escaped, and so is every byte >= 0x80 unless `s` is valid UTF-8. Strings
// longer than 200 bytes are cut and end in "...".
std::string Quote(std::string_view s);

}  // namespace carton::manifest::internal
