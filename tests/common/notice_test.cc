#include "carton/common/notice.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace carton {
namespace {

// Restores the sink that was installed before the test.
struct SinkGuard {
  explicit SinkGuard(NoticeFn fn) : previous(SetNoticeSink(std::move(fn))) {}
  ~SinkGuard() { SetNoticeSink(previous); }
  NoticeFn previous;
};

TEST_CASE("notice: an installed sink gets each notice's text", "[notice]") {
  std::vector<std::string> got;
  SinkGuard guard([&](std::string_view text) { got.emplace_back(text); });
  Notice("u: the server ignores range requests; downloading it whole");
  Notice("second");
  REQUIRE(got.size() == 2);
  CHECK(got[0] == "u: the server ignores range requests; downloading it whole");
  CHECK(got[1] == "second");
}

TEST_CASE("notice: SetNoticeSink returns the sink it replaces; an empty one drops notices",
          "[notice]") {
  int first = 0;
  SinkGuard guard([&](std::string_view) { ++first; });
  NoticeFn previous = SetNoticeSink(NoticeFn());
  REQUIRE(previous);
  Notice("dropped");
  CHECK(first == 0);
  previous("called through the returned sink");
  CHECK(first == 1);
}

TEST_CASE("notice: notices from several threads all reach the sink", "[notice]") {
  std::atomic<int> count{0};
  SinkGuard guard([&](std::string_view) { count.fetch_add(1); });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) Notice("n");
    });
  }
  for (auto& t : threads) t.join();
  CHECK(count.load() == 4000);
}

TEST_CASE("notice: the first sink writes \"carton: TEXT\" to stderr", "[notice]") {
  // Installed again, the sink SetNoticeSink first returns is the default.
  NoticeFn default_sink = SetNoticeSink(NoticeFn());
  SetNoticeSink(default_sink);
  REQUIRE(default_sink);
  std::fflush(stderr);
  const int saved = ::dup(2);
  FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  ::dup2(::fileno(capture), 2);
  Notice("a note");
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(capture);
  char buffer[64] = {};
  const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, capture);
  std::fclose(capture);
  CHECK(std::string(buffer, n) == "carton: a note\n");
}

}  // namespace
}  // namespace carton
