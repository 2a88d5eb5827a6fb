#include "carton/common/toml_screen.h"

#include <catch2/catch.hpp>

using namespace carton;

TEST_CASE("common: the TOML screen limits dotted keys and skips strings and comments",
          "[common][toml]") {
  CHECK(ScreenTomlDottedKeys("a.b.c = 1.5\n", "f", 3).ok());
  Status s = ScreenTomlDottedKeys("x = 1\na.b.c.d = 1\n", "f", 3);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message() == "f:2:6: dotted key has more than 3 parts");
  CHECK_FALSE(ScreenTomlDottedKeys("[a.b.c.d]\n", "f", 3).ok());
  // Dots inside strings, multi-line strings and comments do not count.
  CHECK(ScreenTomlDottedKeys("k = \"a.b.c.d.e\"  # x.y.z.w.v\n", "f", 3).ok());
  CHECK(ScreenTomlDottedKeys("k = '''\na.b.c.d.e\n'''\n", "f", 3).ok());
  CHECK(ScreenTomlDottedKeys("k = \"\"\"\na.b.\\\"c.d.e\n\"\"\"\n", "f", 3).ok());
  CHECK(ScreenTomlDottedKeys("t = 07:32:00.25\n", "f", 2).ok());
  std::string hostile = "a";
  for (int i = 0; i < 300000; ++i) hostile += ".a";
  CHECK_FALSE(ScreenTomlDottedKeys(hostile + " = 1\n", "f", 8).ok());
}
