// Writing TOML strings: the one string writer behind every TOML text carton
// writes (carton.toml, tensor_data/index.toml and string tensors, LINKS).
//
// A basic string escapes '"' and '\\', writes \b \t \n \f \r with their
// short escapes and every other control character and DEL as \u00XX
// (uppercase hex), as TOML 1.0 requires; other bytes are copied. A
// multiline string (""") keeps newlines raw and escapes the rest alike.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace carton {

// Appends `s` to `out` as a TOML basic string ("..."). With `multiline`, a
// value holding a newline is written as a multiline basic string instead
// ("""\n...""", its newlines raw), which reads back as the same value.
// REQUIRES: `s` is valid UTF-8 (TOML strings are).
void AppendTomlString(std::string* out, std::string_view s, bool multiline = false);

}  // namespace carton
