#include "carton/common/temporaries.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/common/atomic_file.h"
#include "carton/common/progress.h"
#include "testing.h"

namespace carton {
namespace {

TEST_CASE("temporaries: a registration lasts until release or destruction", "[temporaries]") {
  const std::size_t before = RegisteredTemporaryCount();
  {
    TemporaryPath a("/nonexistent/a", TemporaryKind::kFile);
    TemporaryPath b =
        TemporaryPath::Create("/nonexistent/b", TemporaryKind::kDirectory, [] { return true; });
    CHECK(RegisteredTemporaryCount() == before + 2);
    a.Release();
    CHECK_FALSE(a.registered());
    CHECK(RegisteredTemporaryCount() == before + 1);
    TemporaryPath c = std::move(b);
    CHECK(c.registered());
    CHECK_FALSE(b.registered());
    CHECK(RegisteredTemporaryCount() == before + 1);
  }
  CHECK(RegisteredTemporaryCount() == before);
}

TEST_CASE("temporaries: a failed creation registers nothing", "[temporaries]") {
  const std::size_t before = RegisteredTemporaryCount();
  TemporaryPath t =
      TemporaryPath::Create("/nonexistent/x", TemporaryKind::kFile, [] { return false; });
  CHECK_FALSE(t.registered());
  CHECK(RegisteredTemporaryCount() == before);
}

TEST_CASE("temporaries: an AtomicFile's temporary is registered until commit or abort",
          "[temporaries]") {
  testing::TempDir tmp;
  const std::size_t before = RegisteredTemporaryCount();
  {
    auto f = AtomicFile::Create(tmp.file("a"));
    REQUIRE(f.ok());
    CHECK(RegisteredTemporaryCount() == before + 1);
    REQUIRE(f->Commit().ok());
    CHECK(RegisteredTemporaryCount() == before);
  }
  {
    auto f = AtomicFile::Create(tmp.file("b"));
    REQUIRE(f.ok());
    CHECK(RegisteredTemporaryCount() == before + 1);
  }
  CHECK(RegisteredTemporaryCount() == before);
  CHECK(std::filesystem::exists(tmp.file("a")));
  CHECK_FALSE(std::filesystem::exists(tmp.file("b")));
}

TEST_CASE("progress: sizes for people", "[progress]") {
  CHECK(HumanBytes(0) == "0 B");
  CHECK(HumanBytes(1023) == "1023 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(std::uint64_t{3} << 30) == "3.0 GiB");
}

TEST_CASE("progress: a line that is not wanted is not enabled", "[progress]") {
  ProgressLine line("x", false);
  CHECK_FALSE(line.enabled());
  line.Update(1, 2);  // draws nothing, does not crash
  line.Finish();
}

}  // namespace
}  // namespace carton
