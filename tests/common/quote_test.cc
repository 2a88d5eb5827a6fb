#include "carton/common/quote.h"

#include <catch2/catch.hpp>
#include <string>

using namespace carton;

TEST_CASE("common: QuoteForMessage escapes what could act on a terminal", "[common]") {
  CHECK(QuoteForMessage("model/w.bin") == "\"model/w.bin\"");
  CHECK(QuoteForMessage("") == "\"\"");
  CHECK(QuoteForMessage("a\"b\\c") == "\"a\\\"b\\\\c\"");
  // C0 controls, DEL, NUL.
  CHECK(QuoteForMessage("\x1b[31mred\n") == "\"\\x1b[31mred\\x0a\"");
  CHECK(QuoteForMessage(std::string("a\0b\x7f", 4)) == "\"a\\x00b\\x7f\"");
  // Valid UTF-8 is kept, except the C1 controls (U+009B is CSI).
  CHECK(QuoteForMessage("h\xc3\xa9 \xe2\x82\xac") == "\"h\xc3\xa9 \xe2\x82\xac\"");
  CHECK(QuoteForMessage("\xc2\x9b"
                        "31m \xc2\x85 \xc2\xa0") == "\"\\xc2\\x9b31m \\xc2\\x85 \xc2\xa0\"");
  // Not UTF-8: every byte >= 0x80 is escaped.
  CHECK(QuoteForMessage("\xc3\xa9\xff") == "\"\\xc3\\xa9\\xff\"");
}

TEST_CASE("common: QuoteForMessage cuts long text, never inside a UTF-8 sequence", "[common]") {
  const std::string long_text(300, 'x');
  CHECK(QuoteForMessage(long_text) == "\"" + std::string(kMaxQuotedBytes, 'x') + "\"...");
  CHECK(QuoteForMessage(long_text, 10) == "\"xxxxxxxxxx\"...");
  CHECK(QuoteForMessage("xxxxxxxxxx", 10) == "\"xxxxxxxxxx\"");
  // The 10th byte is inside "é": the cut goes before it.
  CHECK(QuoteForMessage("xxxxxxxxx\xc3\xa9yy", 10) == "\"xxxxxxxxx\"...");
  // Not UTF-8: cut at the byte.
  CHECK(QuoteForMessage("xxxxxxxxx\xc3\xa9\xff", 10) == "\"xxxxxxxxx\\xc3\"...");
}

TEST_CASE("common: ShowText escapes control characters only", "[common]") {
  CHECK(ShowText("model/w \"x\" \\ h\xc3\xa9") == "model/w \"x\" \\ h\xc3\xa9");
  CHECK(ShowText("a\x1b[2J\tb\nc") == "a\\x1b[2J\\x09b\\x0ac");
  CHECK(ShowText("a\x1b[2J\tb\nc", /*multiline=*/true) == "a\\x1b[2J\tb\nc");
  CHECK(ShowText("\xc2\x9b\xc2\xa0") == "\\xc2\\x9b\xc2\xa0");
  CHECK(ShowText("\xff") == "\\xff");
  CHECK(ShowText(std::string(300, 'x')) == std::string(300, 'x'));  // never cut
}
