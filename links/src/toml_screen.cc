#include "toml_screen.h"

#include <cstddef>
#include <string>

#include "carton/links/links.h"

namespace carton::links {
namespace {

// Walks `text` one byte at a time, knowing the current line and column.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  bool LookingAt(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  std::size_t line() const { return line_; }
  std::size_t column() const { return pos_ - line_start_ + 1; }

  void Advance(std::size_t n = 1) {
    for (; n > 0 && pos_ < text_.size(); --n, ++pos_) {
      if (text_[pos_] == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      }
    }
  }

  void SkipComment() {
    while (!done() && peek() != '\n') Advance();
  }

  // REQUIRES: at an opening quote. Leaves the scanner after the closing
  // quote(s), or at the line end / text end where an invalid string stops
  // (toml++ reports that error itself).
  void SkipString() {
    const char quote = peek();
    const bool escapes = quote == '"';
    const std::string triple(3, quote);
    if (LookingAt(triple)) {
      Advance(3);
      while (!done()) {
        if (escapes && peek() == '\\') {
          Advance(2);
        } else if (LookingAt(triple)) {
          Advance(3);
          // A closing run may hold up to two more quotes of content.
          for (int extra = 0; extra < 2 && !done() && peek() == quote; ++extra) Advance();
          return;
        } else {
          Advance();
        }
      }
      return;
    }
    Advance();
    while (!done() && peek() != '\n') {
      if (escapes && peek() == '\\') {
        Advance();  // the backslash, then the escaped character unless a line end
        if (!done() && peek() != '\n') Advance();
        continue;
      }
      const bool closing = peek() == quote;
      Advance();
      if (closing) return;
    }
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::size_t line_start_ = 0;
};

}  // namespace

Status ScreenDottedKeys(std::string_view text, std::string_view source) {
  Scanner s(text);
  std::size_t dots = 0;
  while (!s.done()) {
    switch (s.peek()) {
      case '#':
        s.SkipComment();
        continue;
      case '"':
      case '\'':
        s.SkipString();
        continue;
      case '\n':
      case '=':
      case ',':
      case '[':
      case ']':
      case '{':
      case '}':
        dots = 0;
        break;
      case '.':
        if (++dots >= kMaxDottedKeyParts) {
          return Corrupt(std::string(source) + ":" + std::to_string(s.line()) + ":" +
                         std::to_string(s.column()) + ": dotted key has more than " +
                         std::to_string(kMaxDottedKeyParts) + " parts");
        }
        break;
      default:
        break;
    }
    s.Advance();
  }
  return Status::Ok();
}

}  // namespace carton::links
