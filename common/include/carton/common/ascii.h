// Small ASCII text helpers for HTTP header lines, registry answers and
// configuration text. Pure functions.
#pragma once

#include <string>
#include <string_view>

namespace carton {

// `s` with ASCII letters lowercased (header names, schemes, auth params).
std::string AsciiLower(std::string_view s);

// `s` without leading and trailing ASCII whitespace (space, tab, CR, LF,
// VT, FF).
std::string_view TrimSpace(std::string_view s);

}  // namespace carton
