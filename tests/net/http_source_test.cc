// HttpRangeSource against a real nginx on 127.0.0.1.
#include "carton/net/http_source.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "nginx_testing.h"
#include "testing.h"

using namespace carton;
using carton::testing::NginxServer;

namespace {

std::string Numbers(std::size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) s += std::to_string(i) + ",";
  s.resize(n);
  return s;
}

net::HttpSourceOptions Quick() {
  net::HttpSourceOptions o;
  o.fetch.attempts_per_url = 1;
  return o;
}

}  // namespace

TEST_CASE("links http source: reads ranges and caches them", "[links][http_source]") {
  NginxServer nginx;
  const std::string data = Numbers(300'000);
  testing::WriteBytes(nginx.www() + "/f.bin", AsBytes(data));
  auto s = net::HttpRangeSource::Open(nginx.Url("/f.bin"), Quick());
  REQUIRE(s.ok());
  CHECK((*s)->size() == data.size());
  CHECK((*s)->stats().requests == 1);
  CHECK((*s)->stats().bytes_received == 8192);  // the tail

  std::string out(1000, '\0');
  MutableByteView view(reinterpret_cast<std::byte*>(out.data()), out.size());
  REQUIRE((*s)->ReadAt(100'000, view).ok());
  CHECK(out == data.substr(100'000, 1000));
  REQUIRE((*s)->ReadAt(100'500, view).ok());  // same 4 KiB blocks: cached
  CHECK(out == data.substr(100'500, 1000));
  REQUIRE((*s)->ReadAt(data.size() - 1000, view).ok());  // in the tail
  CHECK(out == data.substr(data.size() - 1000));
  CHECK((*s)->stats().requests == 2);
  CHECK(nginx.Requests("/f.bin") == 2);

  auto past = (*s)->ReadAt(data.size() - 10, view);
  CHECK(past.code() == StatusCode::kInvalidArgument);
}

TEST_CASE("links http source: refuses servers that ignore Range, and changed files",
          "[links][http_source]") {
  NginxServer nginx;
  const std::string data = Numbers(4 << 20);
  testing::WriteBytes(nginx.www() + "/f.bin", AsBytes(data));

  auto ignored = net::HttpRangeSource::Open(nginx.Url("/norange/f.bin"), Quick());
  REQUIRE_FALSE(ignored.ok());
  CHECK(ignored.status().code() == StatusCode::kUnsupported);
  CHECK(ignored.status().message().find(nginx.Url("/norange/f.bin") +
                                        ": the server ignores range requests") == 0);

  auto missing = net::HttpRangeSource::Open(nginx.Url("/none.bin"), Quick());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("http status 404") != std::string::npos);

  auto s = net::HttpRangeSource::Open(nginx.Url("/f.bin"), Quick());
  REQUIRE(s.ok());
  // Replaced on the server (a new ETag): the next request notices.
  testing::WriteBytes(nginx.www() + "/g.bin", AsBytes(Numbers(5 << 20)));
  std::filesystem::rename(nginx.www() + "/g.bin", nginx.www() + "/f.bin");
  std::string out(10, '\0');
  Status r = (*s)->ReadAt(0, MutableByteView(reinterpret_cast<std::byte*>(out.data()), 10));
  CHECK(r.code() == StatusCode::kNetworkError);
  CHECK(r.message().find("changed on the server") != std::string::npos);

  auto bad = net::HttpRangeSource::Open("ftp://127.0.0.1/x", Quick());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
}
