// A lexical screen run over untrusted TOML before toml++ parses it.
// Private to links/src.
//
// toml++ builds one level of nested tables per part of a dotted key and has
// no limit of its own, so a key like `a.a.a...` with tens of thousands of
// parts overflows the stack. LINKS never needs a dotted key, so the screen
// refuses any key with more than kMaxDottedKeyParts parts before parsing.
#pragma once

#include <string_view>

#include "carton/common/status.h"

namespace carton::links {

// kCorrupt "<source>:<line>:<col>: ..." when a key (bare, quoted, or in a
// table header) has more than kMaxDottedKeyParts parts. The scan skips
// comments and strings of all four kinds and counts the dots between two
// of `= , [ ] { }` or a line end; a value has at most one dot (1.5,
// 07:32:00.25), so valid LINKS text always passes.
Status ScreenDottedKeys(std::string_view text, std::string_view source);

}  // namespace carton::links
