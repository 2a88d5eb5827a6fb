#include "carton/links/blob_cache.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http_server_testing.h"
#include "testing.h"

namespace carton::links {
namespace {

using carton::testing::ListDir;
using testing::Payload;
using testing::PayloadDigest;
using testing::TestServer;

net::FetchOptions Quick() {
  net::FetchOptions o;
  o.attempts_per_url = 2;
  o.initial_backoff = std::chrono::milliseconds(10);
  o.show_progress = false;
  return o;
}

// Sets an environment variable for one scope and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("links: resolves the cache directory from the environment", "[links][cache]") {
  {
    ScopedEnv a("CARTON_CACHE_DIR", "/c/carton"), b("XDG_CACHE_HOME", "/x"), c("HOME", "/h");
    CHECK(*DefaultCacheDir() == "/c/carton");
  }
  {
    ScopedEnv a("CARTON_CACHE_DIR", ""), b("XDG_CACHE_HOME", "/x"), c("HOME", "/h");
    CHECK(*DefaultCacheDir() == "/x/carton");
  }
  {
    ScopedEnv a("CARTON_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", "relative"), c("HOME", "/h");
    CHECK(*DefaultCacheDir() == "/h/.cache/carton");
    auto cache = BlobCache::OpenDefault();
    REQUIRE(cache.ok());
    CHECK(cache->BlobPath(PayloadDigest()) ==
          "/h/.cache/carton/blobs/sha256/" + manifest::ToHex(PayloadDigest()));
  }
  {
    ScopedEnv a("CARTON_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", nullptr);
    auto r = DefaultCacheDir();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("links: a cache miss fetches once and a hit skips the network", "[links][cache]") {
  TestServer server;
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  auto miss = cache.Get(PayloadDigest());
  REQUIRE_FALSE(miss.ok());
  CHECK(miss.status().code() == StatusCode::kNotFound);

  auto path = cache.Fetch(PayloadDigest(), {server.Url("/plain")}, Payload().size(), Quick());
  REQUIRE(path.ok());
  CHECK(*path == cache.BlobPath(PayloadDigest()));
  CHECK(carton::testing::ReadText(*path) == Payload());
  CHECK(server.Requests("/plain") == 1);

  // A hit does not touch the (now unreachable) URL.
  const std::string refused = "http://127.0.0.1:" + std::to_string(testing::ClosedPort()) + "/x";
  auto again = cache.Fetch(PayloadDigest(), {refused}, Payload().size(), Quick());
  REQUIRE(again.ok());
  CHECK(*again == *path);
  CHECK(*cache.Get(PayloadDigest()) == *path);
  CHECK(cache.Verify(PayloadDigest(), Payload().size()).ok());
}

TEST_CASE("links: a failed fetch leaves no file in the cache", "[links][cache]") {
  TestServer server;
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  for (const char* path : {"/wrong", "/truncated/zstd", "/missing"}) {
    INFO(path);
    auto r = cache.Fetch(PayloadDigest(), {server.Url(path)}, 0, Quick());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(server.Url(path)));
    CHECK(ListDir(dir.file("cache/blobs/sha256")).empty());
  }
}

TEST_CASE("links: a download cut off leaves only its partial file, never a blob",
          "[links][cache]") {
  TestServer server;
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  auto r = cache.Fetch(PayloadDigest(), {server.Url("/close")}, 0, Quick());
  REQUIRE_FALSE(r.ok());
  const std::string hex = manifest::ToHex(PayloadDigest());
  for (const auto& name : ListDir(dir.file("cache/blobs/sha256"))) {
    CHECK((name == hex + ".partial" || name == hex + ".partial-validator"));
  }
  auto blobs = cache.List();
  REQUIRE(blobs.ok());
  CHECK(blobs->empty());
  CHECK_FALSE(cache.Get(PayloadDigest()).ok());
  auto partials = cache.ListPartials();
  REQUIRE(partials.ok());
  REQUIRE(partials->size() == 1);
  CHECK((*partials)[0].digest == PayloadDigest());
  CHECK_FALSE((*partials)[0].in_use);
  // No fetch holds its lock: stale, removed.
  CHECK(cache.RemoveStalePartials().size() == 1);
  CHECK(ListDir(dir.file("cache/blobs/sha256")).empty());
}

TEST_CASE("links: the cache discards blobs with the wrong size or hash", "[links][cache]") {
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  const std::string path = cache.BlobPath(PayloadDigest());
  std::filesystem::create_directories(dir.file("cache/blobs/sha256"));
  CHECK(cache.Verify(PayloadDigest()).code() == StatusCode::kNotFound);

  SECTION("wrong size on get") {
    carton::testing::WriteBytes(path, AsBytes("short"));
    auto r = cache.Get(PayloadDigest(), Payload().size());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kNotFound);
    CHECK_THAT(r.status().message(),
               Catch::Contains(path + ": cached blob has 5 bytes, expected " +
                               std::to_string(Payload().size()) + "; discarded"));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("wrong hash on verify") {
    std::string damaged = Payload();
    damaged[1000] ^= 1;
    carton::testing::WriteBytes(path, AsBytes(damaged));
    CHECK(cache.Get(PayloadDigest(), Payload().size()).ok());  // the size alone looks right
    const Status s = cache.Verify(PayloadDigest(), Payload().size());
    CHECK(s.code() == StatusCode::kCorrupt);
    CHECK_THAT(s.message(), Catch::Contains(path + ": cached blob has sha256 " +
                                            manifest::ToHex(manifest::Sha256Of(AsBytes(damaged))) +
                                            "; discarded"));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("wrong size on verify") {
    carton::testing::WriteBytes(path, AsBytes(Payload()));
    CHECK(cache.Verify(PayloadDigest(), Payload().size() + 1).code() == StatusCode::kCorrupt);
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("good blob") {
    carton::testing::WriteBytes(path, AsBytes(Payload()));
    CHECK(cache.Verify(PayloadDigest(), Payload().size()).ok());
    CHECK(cache.Verify(PayloadDigest()).ok());
    CHECK(std::filesystem::exists(path));
  }
}

TEST_CASE("links: eight threads fetching one blob into one cache all succeed",
          "[links][cache][concurrency]") {
  TestServer server;
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  constexpr int kThreads = 8;
  std::vector<Result<std::string>> results(kThreads, Result<std::string>(Internal("not run")));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      results[i] = cache.Fetch(PayloadDigest(), {server.Url("/enc/zstd")}, 0, Quick());
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    INFO(r.status().ToString());
    REQUIRE(r.ok());
    CHECK(*r == cache.BlobPath(PayloadDigest()));
  }
  CHECK(ListDir(dir.file("cache/blobs/sha256")) ==
        std::vector<std::string>{manifest::ToHex(PayloadDigest())});
  CHECK(carton::testing::ReadText(cache.BlobPath(PayloadDigest())) == Payload());
  // The lock let one thread download; the others found the blob.
  CHECK(server.Requests("/enc/zstd") == 1);
}

TEST_CASE("links: eight processes fetching one blob into one cache all succeed",
          "[links][cache][concurrency]") {
  TestServer server;
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  constexpr int kProcesses = 8;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto r = cache.Fetch(PayloadDigest(), {server.Url("/plain")}, Payload().size(), Quick());
      const bool good = r.ok() && carton::testing::ReadText(*r) == Payload();
      ::_exit(good ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(ListDir(dir.file("cache/blobs/sha256")) ==
        std::vector<std::string>{manifest::ToHex(PayloadDigest())});
  CHECK(carton::testing::ReadText(cache.BlobPath(PayloadDigest())) == Payload());
  CHECK(server.Requests("/plain") == 1);
}

TEST_CASE("links: a blob held in use is not removed until it is released", "[links][cache][gc]") {
  carton::testing::TempDir dir;
  const BlobCache cache(dir.file("cache"));
  const std::string path = cache.BlobPath(PayloadDigest());
  std::filesystem::create_directories(dir.file("cache/blobs/sha256"));
  carton::testing::WriteBytes(path, AsBytes(Payload()));
  const manifest::Digest other = manifest::Sha256Of(AsBytes("another blob"));
  {
    BlobsInUse uses = cache.Uses();
    REQUIRE(uses.Hold(PayloadDigest()).ok());
    REQUIRE(uses.Hold(other).ok());  // held before it is cached: allowed
    CHECK(uses.holds(PayloadDigest()));
    // Another holder in this process (its own open file) shares it.
    BlobsInUse second = cache.Uses();
    CHECK(second.Hold(PayloadDigest()).ok());
    const Status refused = cache.Remove(PayloadDigest());
    CHECK(refused.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(refused.message(), Catch::Contains("the blob is in use"));
    CHECK(std::filesystem::exists(path));
    // gc's lock file cleanup leaves the file while anything is held.
    cache.RemoveStaleLocks();
    CHECK(std::filesystem::exists(dir.file("cache/locks/blobs.use")));
    BlobsInUse moved = std::move(uses);
    CHECK(cache.Remove(PayloadDigest()).code() == StatusCode::kInvalidArgument);
  }
  CHECK(cache.Remove(PayloadDigest()).ok());
  CHECK_FALSE(std::filesystem::exists(path));
  cache.RemoveStaleLocks();
  CHECK(ListDir(dir.file("cache/locks")).empty());

  // A holder whose lock file was removed after it opened it moves to the
  // new file: a removal still sees the blob held.
  carton::testing::WriteBytes(path, AsBytes(Payload()));
  BlobsInUse early = cache.Uses();
  REQUIRE(early.Hold(other).ok());
  std::filesystem::remove(dir.file("cache/locks/blobs.use"));  // as a free file is removed
  REQUIRE(early.Hold(PayloadDigest()).ok());
  CHECK(cache.Remove(PayloadDigest()).code() == StatusCode::kInvalidArgument);
  CHECK(std::filesystem::exists(path));
}

}  // namespace
}  // namespace carton::links
