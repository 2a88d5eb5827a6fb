#include "carton/common/toml_screen.h"

#include <string>

namespace carton {
namespace {

// Returns the index of the last character of the string that opens at
// text[i], counting the lines it spans. Follows TOML's string grammar for
// valid input; on invalid input toml++ stops at the same place or earlier.
std::size_t SkipString(std::string_view text, std::size_t i, std::size_t* line,
                       std::size_t* line_start) {
  const char q = text[i];
  const bool basic = q == '"';
  const std::string_view triple = basic ? "\"\"\"" : "'''";
  const std::size_t n = text.size();
  if (text.substr(i, 3) == triple) {
    for (std::size_t j = i + 3; j < n;) {
      const char c = text[j];
      if (basic && c == '\\') {
        if (j + 1 < n && text[j + 1] == '\n') {
          ++*line;
          *line_start = j + 2;
        }
        j += 2;
        continue;
      }
      if (c == '\n') {
        ++*line;
        *line_start = j + 1;
      }
      if (text.substr(j, 3) == triple) {
        // Up to two more quotes belong to the content.
        std::size_t run = 3;
        while (run < 5 && j + run < n && text[j + run] == q) ++run;
        return j + run - 1;
      }
      ++j;
    }
    return n - 1;
  }
  for (std::size_t j = i + 1; j < n;) {
    const char c = text[j];
    if (c == '\n') return j - 1;  // unterminated; the caller sees the newline
    if (basic && c == '\\') {
      j += 2;
      continue;
    }
    if (c == q) return j;
    ++j;
  }
  return n - 1;
}

}  // namespace

Status ScreenTomlDottedKeys(std::string_view text, std::string_view source, std::size_t max_parts) {
  std::size_t dots = 0;
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
      case '\n':
        ++line;
        line_start = i + 1;
        dots = 0;
        break;
      case '#': {
        const std::size_t end = text.find('\n', i);
        if (end == std::string_view::npos) return Status::Ok();
        i = end - 1;
        break;
      }
      case '"':
      case '\'':
        i = SkipString(text, i, &line, &line_start);
        break;
      case '=':
      case ',':
      case '[':
      case ']':
      case '{':
      case '}':
        dots = 0;
        break;
      case '.':
        if (++dots >= max_parts) {
          return Corrupt(std::string(source) + ":" + std::to_string(line) + ":" +
                         std::to_string(i - line_start + 1) + ": dotted key has more than " +
                         std::to_string(max_parts) + " parts");
        }
        break;
      default:
        break;
    }
  }
  return Status::Ok();
}

}  // namespace carton
