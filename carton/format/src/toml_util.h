// TOML helpers shared by the format sources that read untrusted TOML:
// parsing with toml++ into a Status (keeping line and column). Strings are
// written with carton/common/toml_string.h. Private to carton/format/src;
// toml++ types never leave it.
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::format_internal {

// "<source>:<line>:<column>: <message>"
std::string At(std::string_view source, const toml::source_region& where, std::string_view message);

// toml++ recurses once per level of table nesting and builds one level per
// part of a dotted key (`a.b.c = 1`) with no limit of its own, so a long
// dotted key overflows the stack (about 40,000 parts on an 8 MiB stack).
// Inline tables and arrays nest at most 256 deep (TOML_MAX_NESTED_VALUES);
// with this limit the depth stays below 256 * (kMaxFormatTomlDottedKeyParts
// + 1) plus two header/key paths: a few thousand levels. It bounds the keys
// of every TOML file this module reads: carton.toml, tensor_data/index.toml
// and the string tensors' files.
inline constexpr std::size_t kMaxFormatTomlDottedKeyParts = 8;

// kCorrupt "<source>:<line>:<col>: ..." if a key in `text` has more than
// kMaxFormatTomlDottedKeyParts parts. A conservative lexical scan: between two of
// `= , [ ] { }` or line ends, outside strings and comments, it counts dots;
// a value has at most one (1.5, 07:32:00.25).
Status CheckKeyDepth(std::string_view text, std::string_view source);

// Parses `text` (after CheckKeyDepth); a syntax error becomes kCorrupt
// "<source>:<line>:<col>: ...".
Result<toml::table> ParseToml(std::string_view text, std::string_view source);

}  // namespace carton::format_internal
