#include "carton/net/fetch.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>

#include "http_server_testing.h"
#include "string_sink_testing.h"
#include "testing.h"

namespace carton::net {
namespace {

using carton::testing::FileSizeLimit;
using carton::testing::ListDir;
using carton::testing::StringSink;
using testing::Payload;
using testing::PayloadDigest;
using testing::TestServer;
using Clock = std::chrono::steady_clock;

// Fast options: few attempts, short waits, no progress line.
FetchOptions Quick() {
  FetchOptions o;
  o.attempts_per_url = 2;
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(50);
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.low_speed_time = std::chrono::seconds(2);
  o.show_progress = false;
  return o;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void RequireFailure(const Status& s, StatusCode code, const std::string& substring) {
  REQUIRE_FALSE(s.ok());
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK_THAT(s.message(), Catch::Contains(substring));
}

TEST_CASE("links: fetches plain bytes over http", "[links][fetch]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  REQUIRE(
      FetchToFile({server.Url("/plain")}, PayloadDigest(), Payload().size(), dest, Quick()).ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"blob"});
  // The size is optional.
  REQUIRE(FetchToFile({server.Url("/plain")}, PayloadDigest(), 0, dest, Quick()).ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
}

TEST_CASE("links: decodes every content encoding and hashes the decoded bytes",
          "[links][fetch][encoding]") {
  TestServer server;
  carton::testing::TempDir dir;
  for (const char* encoding : {"gzip", "deflate", "br", "zstd"}) {
    INFO(encoding);
    const std::string dest = dir.file(encoding);
    const Status s = FetchToFile({server.Url(std::string("/enc/") + encoding)}, PayloadDigest(),
                                 Payload().size(), dest, Quick());
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(carton::testing::ReadText(dest) == Payload());
  }
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"br", "deflate", "gzip", "zstd"});
}

TEST_CASE("links: an http error status names the url and status and leaves nothing",
          "[links][fetch]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string url = server.Url("/missing");
  RequireFailure(FetchToFile({url}, PayloadDigest(), 0, dir.file("blob"), Quick()),
                 StatusCode::kNetworkError,
                 "sha256 " + manifest::ToHex(PayloadDigest()) + ": the only url failed: " + url +
                     ": http status 404");
  CHECK(server.Requests("/missing") == 1);  // a 404 is not retried
  CHECK(ListDir(dir.path()).empty());
}

TEST_CASE("links: retries a 500 and then succeeds", "[links][fetch][retry]") {
  TestServer server;
  carton::testing::TempDir dir;
  REQUIRE(FetchToFile({server.Url("/flaky")}, PayloadDigest(), 0, dir.file("blob"), Quick()).ok());
  CHECK(server.Requests("/flaky") == 2);
  CHECK(carton::testing::ReadText(dir.file("blob")) == Payload());
}

TEST_CASE("links: gives up on a persistent 503 after the allowed attempts",
          "[links][fetch][retry]") {
  TestServer server;
  carton::testing::TempDir dir;
  FetchOptions o = Quick();
  o.attempts_per_url = 3;
  RequireFailure(FetchToFile({server.Url("/broken")}, PayloadDigest(), 0, dir.file("blob"), o),
                 StatusCode::kNetworkError, "/broken: http status 503 (after 3 attempts)");
  CHECK(server.Requests("/broken") == 3);
  CHECK(ListDir(dir.path()).empty());
}

TEST_CASE("links: waits for Retry-After on a 429", "[links][fetch][retry]") {
  TestServer server;
  carton::testing::TempDir dir;
  const auto start = Clock::now();
  REQUIRE(FetchToFile({server.Url("/busy")}, PayloadDigest(), 0, dir.file("blob"), Quick()).ok());
  CHECK(SecondsSince(start) >= 0.9);
  CHECK(server.Requests("/busy") == 2);
  CHECK(carton::testing::ReadText(dir.file("blob")) == Payload());
}

TEST_CASE("links: caps the Retry-After wait", "[links][fetch][retry]") {
  TestServer server;
  carton::testing::TempDir dir;
  FetchOptions o = Quick();
  o.max_retry_after = std::chrono::seconds(0);
  const auto start = Clock::now();
  REQUIRE(FetchToFile({server.Url("/busy")}, PayloadDigest(), 0, dir.file("blob"), o).ok());
  CHECK(SecondsSince(start) < 0.9);
}

TEST_CASE("links: a connection closed mid-body is retried, then falls back",
          "[links][fetch][fallback]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  RequireFailure(FetchToFile({server.Url("/close")}, PayloadDigest(), 0, dest, Quick()),
                 StatusCode::kNetworkError, server.Url("/close") + ": ");
  CHECK(server.Requests("/close") == 2);
  CHECK(ListDir(dir.path()).empty());
  REQUIRE(
      FetchToFile({server.Url("/close"), server.Url("/plain")}, PayloadDigest(), 0, dest, Quick())
          .ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"blob"});
}

TEST_CASE("links: a body cut off inside its encoding ends in a hash mismatch",
          "[links][fetch][encoding]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  for (const char* encoding : {"zstd", "gzip", "br", "deflate"}) {
    INFO(encoding);
    const std::string url = server.Url(std::string("/truncated/") + encoding);
    // libcurl reports success for the cut body: only the hash catches it.
    RequireFailure(FetchToFile({url}, PayloadDigest(), 0, dest, Quick()), StatusCode::kCorrupt,
                   url + ": sha256 is ");
    CHECK(ListDir(dir.path()).empty());
    REQUIRE(FetchToFile({url, server.Url("/plain")}, PayloadDigest(), 0, dest, Quick()).ok());
    CHECK(carton::testing::ReadText(dest) == Payload());
    std::filesystem::remove(dest);
  }
  // A known size catches it before the hash.
  const std::string url = server.Url("/truncated/gzip");
  RequireFailure(FetchToFile({url}, PayloadDigest(), Payload().size(), dest, Quick()),
                 StatusCode::kCorrupt, url + ": got ");
  CHECK(ListDir(dir.path()).empty());
}

TEST_CASE("links: wrong bytes fall back to the next url", "[links][fetch][fallback]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  RequireFailure(
      FetchToFile({server.Url("/wrong")}, PayloadDigest(), 0, dest, Quick()), StatusCode::kCorrupt,
      server.Url("/wrong") + ": sha256 is " +
          manifest::ToHex(manifest::Sha256Of(
              AsBytes(std::string(1, static_cast<char>(Payload()[0] ^ 1)) + Payload().substr(1)))) +
          ", expected " + manifest::ToHex(PayloadDigest()));
  CHECK(server.Requests("/wrong") == 1);  // a mismatch is not retried at the same url
  CHECK(ListDir(dir.path()).empty());
  REQUIRE(
      FetchToFile({server.Url("/wrong"), server.Url("/plain")}, PayloadDigest(), 0, dest, Quick())
          .ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
}

TEST_CASE("links: a stalled server times out and falls back", "[links][fetch][fallback]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  FetchOptions o = Quick();
  o.attempts_per_url = 1;
  o.low_speed_time = std::chrono::seconds(1);
  auto start = Clock::now();
  RequireFailure(FetchToFile({server.Url("/slow")}, PayloadDigest(), 0, dest, o),
                 StatusCode::kNetworkError, server.Url("/slow") + ": Timeout was reached");
  CHECK(SecondsSince(start) < 3.0);
  CHECK(ListDir(dir.path()).empty());
  start = Clock::now();
  REQUIRE(
      FetchToFile({server.Url("/slow"), server.Url("/plain")}, PayloadDigest(), 0, dest, o).ok());
  CHECK(SecondsSince(start) < 3.0);
  CHECK(carton::testing::ReadText(dest) == Payload());
}

TEST_CASE("links: refuses a decompression bomb at the size cap", "[links][fetch][encoding]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  FetchOptions o = Quick();
  o.max_decoded_size = 1 << 20;
  RequireFailure(FetchToFile({server.Url("/bomb")}, PayloadDigest(), 0, dest, o),
                 StatusCode::kCorrupt,
                 server.Url("/bomb") + ": body exceeds the limit of 1048576 decoded bytes");
  CHECK(ListDir(dir.path()).empty());
  // A known size is the cap.
  RequireFailure(
      FetchToFile({server.Url("/bomb")}, PayloadDigest(), Payload().size(), dest, Quick()),
      StatusCode::kCorrupt,
      "body exceeds the expected " + std::to_string(Payload().size()) + " bytes");
  CHECK(ListDir(dir.path()).empty());
}

TEST_CASE("links: follows http redirects but never to a file url", "[links][fetch][redirect]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  REQUIRE(FetchToFile({server.Url("/redirect/plain")}, PayloadDigest(), 0, dest, Quick()).ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
  std::filesystem::remove(dest);

  // The target file holds exactly the right bytes, so only the refusal
  // keeps this from succeeding; allowing file links does not allow
  // redirects to them.
  FetchOptions o = Quick();
  o.allow_file_links = true;
  RequireFailure(
      FetchToFile({server.Url("/redirect/file")}, PayloadDigest(), 0, dest, o),
      StatusCode::kNetworkError,
      server.Url("/redirect/file") + ": redirect to file://" + server.payload_path() + " refused");
  CHECK(ListDir(dir.path()).empty());

  o.max_redirects = 3;
  RequireFailure(FetchToFile({server.Url("/redirect/loop")}, PayloadDigest(), 0, dest, o),
                 StatusCode::kNetworkError, server.Url("/redirect/loop") + ": ");
  CHECK(server.Requests("/redirect/loop") == 4);
  CHECK(ListDir(dir.path()).empty());
}

TEST_CASE("links: file urls only when allowed", "[links][fetch]") {
  carton::testing::TempDir dir;
  const std::string source = dir.file("source");
  carton::testing::WriteBytes(source, AsBytes(Payload()));
  const std::string url = "file://" + source;
  const std::string dest = dir.file("blob");
  RequireFailure(FetchToFile({url}, PayloadDigest(), 0, dest, Quick()),
                 StatusCode::kInvalidArgument,
                 url + ": file links are not allowed (allow_file_links is off)");
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"source"});
  FetchOptions o = Quick();
  o.allow_file_links = true;
  REQUIRE(FetchToFile({url}, PayloadDigest(), Payload().size(), dest, o).ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
  RequireFailure(FetchToFile({"file://" + dir.file("absent")}, PayloadDigest(), 0, dest, o),
                 StatusCode::kNetworkError, dir.file("absent"));
}

TEST_CASE("links: lists every url's failure in one error", "[links][fetch][fallback]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string refused = "http://127.0.0.1:" + std::to_string(testing::ClosedPort()) + "/x";
  const Status s =
      FetchToFile({server.Url("/missing"), "ftp://127.0.0.1/x", refused, server.Url("/wrong")},
                  PayloadDigest(), 0, dir.file("blob"), Quick());
  RequireFailure(s, StatusCode::kNetworkError,
                 "sha256 " + manifest::ToHex(PayloadDigest()) +
                     ": every url failed: " + server.Url("/missing") +
                     ": http status 404; \"ftp://127.0.0.1/x\": url scheme "
                     "\"ftp\" is not http, https or file; " +
                     refused + ": ");
  CHECK_THAT(s.message(),
             Catch::Contains("(after 2 attempts); " + server.Url("/wrong") + ": sha256 is "));
  CHECK(ListDir(dir.path()).empty());
}

TEST_CASE("links: a refused connection falls back to the next url", "[links][fetch][fallback]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string refused = "http://127.0.0.1:" + std::to_string(testing::ClosedPort()) + "/x";
  REQUIRE(
      FetchToFile({refused, server.Url("/plain")}, PayloadDigest(), 0, dir.file("blob"), Quick())
          .ok());
  CHECK(carton::testing::ReadText(dir.file("blob")) == Payload());
}

TEST_CASE("links: a failed fetch leaves an existing destination untouched", "[links][fetch]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  carton::testing::WriteBytes(dest, AsBytes("old"));
  REQUIRE_FALSE(FetchToFile({server.Url("/wrong")}, PayloadDigest(), 0, dest, Quick()).ok());
  CHECK(carton::testing::ReadText(dest) == "old");
  REQUIRE(FetchToFile({server.Url("/plain")}, PayloadDigest(), 0, dest, Quick()).ok());
  CHECK(carton::testing::ReadText(dest) == Payload());
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"blob"});
}

TEST_CASE("links: a failed write is returned at once, without trying other urls",
          "[links][fetch]") {
  TestServer server;
  carton::testing::TempDir dir;
  const std::string dest = dir.file("blob");
  FetchOptions o = Quick();
  o.max_decoded_size = std::uint64_t{1} << 30;
  // The write fails once the whole body has arrived (the 256 KiB payload is
  // flushed when the file is committed), and while most of the body is
  // still to come (64 MiB from /bomb).
  for (const char* path : {"/plain", "/bomb"}) {
    INFO(path);
    Status s;
    {
      FileSizeLimit limit(64 << 10);
      s = FetchToFile({server.Url(path), server.Url("/redirect/plain")}, PayloadDigest(), 0, dest,
                      o);
    }
    RequireFailure(s, StatusCode::kIoError, dest + ": write failed: ");
    CHECK(server.Requests(path) == 1);
    CHECK(server.Requests("/redirect/plain") == 0);
    CHECK(ListDir(dir.path()).empty());
  }
}

TEST_CASE("links: FetchToStream hands the decoded bytes to its sink", "[links][fetch][stream]") {
  TestServer server;
  for (const char* path : {"/plain", "/enc/zstd", "/enc/gzip"}) {
    INFO(path);
    StringSink sink;
    REQUIRE(
        FetchToStream({server.Url(path)}, PayloadDigest(), Payload().size(), sink, Quick()).ok());
    CHECK(sink.bytes == Payload());
    CHECK(sink.restarts == 1);
  }
}

TEST_CASE("links: FetchToStream fails a wrong sha256 or size after the bytes",
          "[links][fetch][stream]") {
  TestServer server;
  StringSink sink;
  RequireFailure(
      FetchToStream({server.Url("/wrong")}, PayloadDigest(), Payload().size(), sink, Quick()),
      StatusCode::kCorrupt,
      server.Url("/wrong") + ": sha256 is " +
          manifest::ToHex(manifest::Sha256Of(
              AsBytes(std::string(1, static_cast<char>(Payload()[0] ^ 1)) + Payload().substr(1)))) +
          ", expected " + manifest::ToHex(PayloadDigest()));
  CHECK(sink.bytes.size() == Payload().size());  // delivered, but the fetch failed
  const std::string url = server.Url("/truncated/gzip");
  RequireFailure(FetchToStream({url}, PayloadDigest(), Payload().size(), sink, Quick()),
                 StatusCode::kCorrupt, url + ": got ");
  RequireFailure(FetchToStream({url}, PayloadDigest(), 0, sink, Quick()),
                 StatusCode::kInvalidArgument, "a streamed fetch needs the size");
}

TEST_CASE("links: FetchToStream starts every attempt over; a sink that cannot ends the fetch",
          "[links][fetch][stream]") {
  TestServer server;
  // /close sends half the payload twice (two attempts), then /plain all
  // of it: the sink is told to start over each time.
  StringSink sink;
  REQUIRE(FetchToStream({server.Url("/close"), server.Url("/plain")}, PayloadDigest(),
                        Payload().size(), sink, Quick())
              .ok());
  CHECK(sink.bytes == Payload());
  CHECK(sink.restarts == 3);
  CHECK(server.Requests("/close") == 2);

  // A sink that refuses to start over after the cut: no second attempt and
  // no fallback.
  StringSink refusing(/*refuse_restart=*/true);
  RequireFailure(FetchToStream({server.Url("/close"), server.Url("/plain")}, PayloadDigest(),
                               Payload().size(), refusing, Quick()),
                 StatusCode::kIoError, "cannot take the bytes again");
  CHECK(server.Requests("/close") == 4);
  CHECK(server.Requests("/plain") == 1);
  CHECK(refusing.bytes.size() == Payload().size() / 2);
}

// Keeps the last `keep` pieces a transfer shares with it, and checks each
// one still holds the bytes it had on arrival when it lets it go.
class KeepingSink final : public StreamSink {
 public:
  explicit KeepingSink(std::size_t keep) : keep_(keep) {}
  ~KeepingSink() override { ReleaseAll(); }
  Status Restart() override {
    ReleaseAll();
    all_.clear();
    return Status::Ok();
  }
  Status Append(ByteView) override { return Internal("bytes were copied, not shared"); }
  Status AppendShared(std::shared_ptr<const std::byte> owner, ByteView bytes) override {
    all_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    buffers.insert(owner.get());
    ++pieces;
    held_.push_back({std::move(owner), bytes, manifest::Sha256Of(bytes)});
    if (held_.size() > keep_) Release();
    return Status::Ok();
  }
  void ReleaseAll() {
    while (!held_.empty()) Release();
  }
  const std::string& bytes() const { return all_; }
  std::set<const std::byte*> buffers;  // distinct buffers shared
  int pieces = 0;
  int changed = 0;  // pieces whose bytes changed while they were held

 private:
  struct Held {
    std::shared_ptr<const std::byte> owner;
    ByteView bytes;
    manifest::Digest sha256;
  };
  void Release() {
    if (manifest::Sha256Of(held_.front().bytes) != held_.front().sha256) ++changed;
    held_.pop_front();
  }
  std::size_t keep_;
  std::deque<Held> held_;
  std::string all_;
};

TEST_CASE("links: FetchToStream shares its buffers with the sink and reuses each once dropped",
          "[links][fetch][stream]") {
  carton::testing::TempDir dir;
  // 12 MiB: more than the transfer's buffers hold (32 of 256 KiB,
  // fetch.h), so each is reused.
  std::string body;
  for (int i = 0; body.size() < (12u << 20); ++i) body += "piece " + std::to_string(i) + "\n";
  const std::string source = dir.file("source");
  carton::testing::WriteBytes(source, AsBytes(body));
  FetchOptions o = Quick();
  o.allow_file_links = true;
  KeepingSink sink(/*keep=*/5);
  REQUIRE(
      FetchToStream({"file://" + source}, manifest::Sha256Of(AsBytes(body)), body.size(), sink, o)
          .ok());
  CHECK(sink.bytes() == body);
  // Whole buffers of 256 KiB (the last one short), not libcurl's smaller
  // pieces, from a bounded set that was used more than once; the last five
  // outlive the transfer.
  CHECK(sink.pieces == static_cast<int>((body.size() + (256u << 10) - 1) / (256u << 10)));
  CHECK(sink.buffers.size() < static_cast<std::size_t>(sink.pieces));
  CHECK(sink.buffers.size() <= 32);
  sink.ReleaseAll();
  CHECK(sink.changed == 0);
}

TEST_CASE("links: rejects bad arguments before any transfer", "[links][fetch]") {
  carton::testing::TempDir dir;
  RequireFailure(FetchToFile({}, PayloadDigest(), 0, dir.file("blob"), Quick()),
                 StatusCode::kInvalidArgument, "no urls to fetch from");
  FetchOptions o = Quick();
  o.attempts_per_url = 0;
  RequireFailure(FetchToFile({"http://127.0.0.1/x"}, PayloadDigest(), 0, dir.file("blob"), o),
                 StatusCode::kInvalidArgument, "attempts_per_url must be at least 1");
  o = Quick();
  o.max_decoded_size = 10;
  RequireFailure(FetchToFile({"http://127.0.0.1/x"}, PayloadDigest(), 11, dir.file("blob"), o),
                 StatusCode::kInvalidArgument, "expected size 11 exceeds max_decoded_size 10");
  RequireFailure(FetchToFile({"http://127.0.0.1/x"}, PayloadDigest(), 0,
                             dir.file("no-such-dir/blob"), Quick()),
                 StatusCode::kIoError, "no-such-dir/blob");
}

}  // namespace
}  // namespace carton::net
