// A lexical screen for untrusted TOML, run before a TOML parser sees it.
//
// toml++ builds one level of nested tables per part of a dotted key and has
// no limit of its own, so a key like `a.a.a...` with ~200,000 parts (well
// inside any file-size limit) overflows the stack. The screen refuses keys
// with too many parts first. It knows only enough TOML to skip comments and
// strings of all four kinds; it counts the dots between two of
// `= , [ ] { }` or a line end, and a value holds at most one dot
// (1.5, 07:32:00.25), so valid files with short keys always pass.
// Thread-safe; takes untrusted input.
#pragma once

#include <cstddef>
#include <string_view>

#include "carton/common/status.h"

namespace carton {

// kCorrupt "<source>:<line>:<col>: dotted key has more than N parts" when a
// key (bare, quoted, or in a table header) has more than `max_parts` parts.
// REQUIRES: max_parts >= 2 (a value may hold one dot, which is counted).
Status ScreenTomlDottedKeys(std::string_view text, std::string_view source, std::size_t max_parts);

}  // namespace carton
