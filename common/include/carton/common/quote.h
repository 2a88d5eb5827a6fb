// Untrusted text in error messages: names and values from files, URLs and
// registries, quoted so that a hostile one can neither put terminal control
// sequences on the user's screen nor make a message ambiguous.
// Thread-safe free functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace carton {

// Default for QuoteForMessage's max_bytes.
inline constexpr std::size_t kMaxQuotedBytes = 200;

// `s` in double quotes: `"` and `\` get a backslash; control characters (C0,
// DEL and the C1 range U+0080-U+009F) and, when `s` is not valid UTF-8, every
// byte >= 0x80 are written as \xNN. Past `max_bytes` of `s` the text is cut
// (not inside a UTF-8 sequence) and "..." follows the closing quote.
std::string QuoteForMessage(std::string_view s, std::size_t max_bytes = kMaxQuotedBytes);

// `s` for a listing (names and descriptions a command prints): as it is,
// without quotes or a cut, except that control characters (C0 other than
// newline and tab when `multiline`, DEL, C1) and, when `s` is not valid
// UTF-8, every byte >= 0x80 are written as \xNN.
std::string ShowText(std::string_view s, bool multiline = false);

}  // namespace carton
