// The registry client against a hostile registry on 127.0.0.1: answers
// that never end are cut off at their limits (manifests, token answers,
// error bodies), and an answer dripped just fast enough to pass the
// low-speed rule ends at the exchange deadline (oci/FORMAT.md "Limits",
// net/FORMAT.md "Small exchanges").
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <optional>

#include "carton/oci/client.h"
#include "oci/hostile_registry_testing.h"
#include "testing.h"

namespace carton::oci {
namespace {

using carton::testing::HostileRegistry;
using carton::testing::TempDir;
using Clock = std::chrono::steady_clock;

// Far more than the client may read past a limit (the limit, and what the
// kernel's socket buffers hold), far less than the 512 MiB an endless body
// stops at.
constexpr std::int64_t kMostSent = std::int64_t{32} << 20;

// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

struct Setup {
  TempDir dir;
  Environment options;
  Setup() {
    carton::testing::WriteBytes(dir.file("empty.json"), AsBytes("{\"auths\": {}}"));
    options.network.attempts_per_url = 2;
    options.network.initial_backoff = std::chrono::milliseconds(10);
    options.network.max_backoff = std::chrono::milliseconds(50);
    options.network.show_progress = false;
    options.network.access = net::HttpAccess{};
    options.registry_config = dir.file("empty.json");
  }
};

std::unique_ptr<Client> Open(const HostileRegistry& registry, const Environment& options) {
  auto c = Client::Open(registry.host(), options);
  REQUIRE(c.ok());
  return std::move(c).value();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST_CASE("oci hostile: a manifest that never ends is cut off at its limit",
          "[oci][hostile][limit]") {
  HostileRegistry registry("127.0.0.1");
  Setup s;
  auto client = Open(registry, s.options);
  const auto start = Clock::now();
  auto m = client->GetManifest("endless", "v1");
  INFO(SecondsSince(start) << " s");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kCorrupt);
  CHECK(m.status().message() == registry.host() +
                                    "/endless: manifest v1: larger than the limit of " +
                                    std::to_string(kMaxImageManifestSize) + " bytes");
  const std::int64_t sent = registry.BytesSent("endless");
  INFO("the registry sent " << sent << " bytes");
  CHECK(sent > 0);
  CHECK(sent < kMostSent);
}

TEST_CASE("oci hostile: a token answer that never ends is cut off at its limit",
          "[oci][hostile][limit]") {
  HostileRegistry registry("127.0.0.1", "{self}/endless-token");
  Setup s;
  auto client = Open(registry, s.options);
  auto m = client->GetManifest("tokened", "v1");
  REQUIRE_FALSE(m.ok());
  INFO(m.status().ToString());
  CHECK(m.status().code() == StatusCode::kNetworkError);
  CHECK(m.status().message().find(registry.Url("/endless-token") +
                                  ": the token server's answer is larger than the limit of "
                                  "1048576 bytes") != std::string::npos);
  const std::int64_t sent = registry.BytesSent("endless-token");
  INFO("the token server sent " << sent << " bytes");
  CHECK(sent > 0);
  CHECK(sent < kMostSent);
}

TEST_CASE("oci hostile: an error body that never ends is cut off, its status and start kept",
          "[oci][hostile][limit]") {
  HostileRegistry registry("127.0.0.1");
  Setup s;
  auto client = Open(registry, s.options);
  const std::string data = "some bytes";
  auto pushed = client->PushBlob("errbody", manifest::Sha256Of(AsBytes(data)), AsBytes(data));
  REQUIRE_FALSE(pushed.ok());
  INFO(pushed.status().ToString());
  CHECK(pushed.status().code() == StatusCode::kNetworkError);
  const std::string& message = pushed.status().message();
  CHECK(message.find(": starting an upload: http status 400 ({\"errors\": [{\"code\": "
                     "\"DENIED\", \"message\": \"xxx") != std::string::npos);
  CHECK(message.find("xxx...)") != std::string::npos);
  const std::int64_t sent = registry.BytesSent("errbody");
  INFO("the registry sent " << sent << " bytes");
  CHECK(sent > 0);
  CHECK(sent < kMostSent);
}

TEST_CASE("oci hostile: a redirect whose body never ends is not followed",
          "[oci][hostile][limit]") {
  HostileRegistry registry("127.0.0.1");
  Setup s;
  auto client = Open(registry, s.options);
  auto m = client->GetManifest("redirect", "v1");
  REQUIRE_FALSE(m.ok());
  INFO(m.status().ToString());
  CHECK(m.status().code() == StatusCode::kNetworkError);
  CHECK(m.status().message() == registry.host() +
                                    "/redirect: manifest v1: the body of a redirect passed the "
                                    "limit of 1048576 bytes");
  const std::int64_t sent = registry.BytesSent("redirect");
  INFO("the registry sent " << sent << " bytes");
  CHECK(sent > 0);
  CHECK(sent < kMostSent);
}

TEST_CASE("oci hostile: a manifest dripped past the low-speed rule ends at the exchange deadline",
          "[oci][hostile][deadline]") {
  HostileRegistry registry("127.0.0.1");
  Setup s;
  s.options.network.exchange_timeout = std::chrono::seconds(2);
  auto client = Open(registry, s.options);
  const auto start = Clock::now();
  auto m = client->GetManifest("drip", "v1");
  const double took = SecondsSince(start);
  INFO(took << " s");
  REQUIRE_FALSE(m.ok());
  INFO(m.status().ToString());
  CHECK(m.status().code() == StatusCode::kNetworkError);
  CHECK(m.status().message() == registry.host() +
                                    "/drip: manifest v1: " + registry.Url("/v2/drip/manifests/v1") +
                                    ": no complete answer within 2 s (CARTON_HTTP_TIMEOUT)");
  // One attempt: the deadline is not retried.
  CHECK(took >= 1.9);
  CHECK(took < 3.9);
  // The server dripped for the 2 s the client waited, and no more.
  CHECK(registry.BytesSent("drip") < 12 * 2048);
}

TEST_CASE("oci hostile: CARTON_HTTP_TIMEOUT sets the exchange deadline",
          "[oci][hostile][deadline]") {
  HostileRegistry registry("127.0.0.1");
  Setup s;
  {
    ScopedEnv timeout("CARTON_HTTP_TIMEOUT", "1");
    auto client = Open(registry, s.options);
    const auto start = Clock::now();
    auto m = client->GetManifest("drip", "v1");
    const double took = SecondsSince(start);
    INFO(took << " s");
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().message().find(": no complete answer within 1 s (CARTON_HTTP_TIMEOUT)") !=
          std::string::npos);
    CHECK(took < 2.9);
  }
  ScopedEnv bad("CARTON_HTTP_TIMEOUT", "soon");
  auto refused = Client::Open(registry.host(), s.options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "CARTON_HTTP_TIMEOUT: \"soon\" is not a whole number of seconds from 1 to 1000000");
}

TEST_CASE("oci hostile: an exchange that sends a body gets a second more per MiB of it",
          "[oci][hostile][deadline]") {
  // The registry answers a manifest PUT 1.5 s after it has read the body.
  HostileRegistry registry("127.0.0.1");
  Setup s;
  s.options.network.exchange_timeout = std::chrono::seconds(1);
  auto client = Open(registry, s.options);
  const std::string small = "{}";
  auto put = client->PutManifest("slow", "v1", kImageManifestMediaType, AsBytes(small));
  REQUIRE_FALSE(put.ok());
  CHECK(put.status().message().find("no complete answer within 1 s (CARTON_HTTP_TIMEOUT)") !=
        std::string::npos);
  // 2 MiB: 1 s + 2 s.
  const std::string large(std::size_t{2} << 20, ' ');
  put = client->PutManifest("slow", "v1", kImageManifestMediaType, AsBytes(large));
  INFO(put.status().ToString());
  CHECK(put.ok());
}

}  // namespace
}  // namespace carton::oci
