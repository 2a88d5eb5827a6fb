#include "carton/common/toml_string.h"

#include <catch2/catch.hpp>
#include <string>

using namespace carton;

namespace {

std::string Toml(std::string_view s, bool multiline = false) {
  std::string out;
  AppendTomlString(&out, s, multiline);
  return out;
}

}  // namespace

TEST_CASE("common: TOML strings escape what TOML requires and nothing else", "[common]") {
  CHECK(Toml("plain") == "\"plain\"");
  CHECK(Toml("") == "\"\"");
  CHECK(Toml("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(Toml("\b\t\n\f\r") == "\"\\b\\t\\n\\f\\r\"");
  CHECK(Toml(std::string("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001F\\u007F\"");
  CHECK(Toml(std::string("nul\0", 4)) == "\"nul\\u0000\"");
  CHECK(Toml("h\xc3\xa9") == "\"h\xc3\xa9\"");  // UTF-8 is copied
  CHECK(Toml("https://example.com/a?b=c#d") == "\"https://example.com/a?b=c#d\"");
}

TEST_CASE("common: multiline TOML strings keep newlines only when there are some", "[common]") {
  CHECK(Toml("one line", true) == "\"one line\"");
  CHECK(Toml("two\nlines \"q\"\t", true) == "\"\"\"\ntwo\nlines \\\"q\\\"\\t\"\"\"");
}
