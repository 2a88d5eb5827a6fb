// Where a registry's credentials go in the bearer token flow (oci/FORMAT.md
// "Authentication"): a registry on 127.0.0.1 whose 401 names a token realm
// on 127.0.0.2 (another host; both loopback) or on 127.0.0.1 at another
// port (the same host). The token server records the Authorization header
// of every request it receives.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "carton/oci/client.h"
#include "oci/hostile_registry_testing.h"
#include "testing.h"

namespace carton::oci {
namespace {

using carton::testing::HostileRegistry;
using carton::testing::TempDir;

// base64("alice:wonderland"), base64("tokenuser:tokenpass")
constexpr char kRegistryAuth[] = "YWxpY2U6d29uZGVybGFuZA==";
constexpr char kRealmAuth[] = "dG9rZW51c2VyOnRva2VucGFzcw==";

// A credentials file with an entry for each of `hosts`: the registry's
// password for the first, the token user's for the others.
std::string WriteConfig(const TempDir& dir, const std::vector<std::string>& hosts) {
  std::string json = "{\"auths\": {";
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) json += ", ";
    json += "\"" + hosts[i] + "\": {\"auth\": \"" + (i == 0 ? kRegistryAuth : kRealmAuth) + "\"}";
  }
  json += "}}";
  carton::testing::WriteBytes(dir.file("config.json"), AsBytes(json));
  return dir.file("config.json");
}

Environment Options(const std::string& config) {
  Environment o;
  o.network.attempts_per_url = 1;
  o.network.show_progress = false;
  o.network.access = net::HttpAccess{};
  o.registry_config = config;
  return o;
}

Result<Manifest> GetTokened(const HostileRegistry& registry, const std::string& config) {
  auto client = Client::Open(registry.host(), Options(config));
  REQUIRE(client.ok());
  return (*client)->GetManifest("tokened", "v1");
}

TEST_CASE("oci realm: a token realm on another host gets none of the registry's credentials",
          "[oci][auth][realm]") {
  HostileRegistry tokens("127.0.0.2");
  HostileRegistry registry("127.0.0.1", tokens.Url("/token"));
  TempDir dir;
  auto m = GetTokened(registry, WriteConfig(dir, {registry.host()}));
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  // The token was asked for anonymously.
  CHECK(tokens.TokenAuthorizations() == std::vector<std::string>{""});
}

TEST_CASE("oci realm: a refusal of the anonymous token request says why no credentials were sent",
          "[oci][auth][realm]") {
  HostileRegistry tokens("127.0.0.2", "", /*require_auth=*/true);
  HostileRegistry registry("127.0.0.1", tokens.Url("/token"));
  TempDir dir;
  auto m = GetTokened(registry, WriteConfig(dir, {registry.host()}));
  REQUIRE_FALSE(m.ok());
  INFO(m.status().ToString());
  CHECK(m.status().code() == StatusCode::kNetworkError);
  CHECK(m.status().message() ==
        registry.host() + ": the token server " + tokens.Url("/token") +
            " refused anonymous access: http status 401 (UNAUTHORIZED: credentials required); "
            "credentials for " +
            registry.host() + " were not sent to the token server at " + tokens.host() +
            " (another host); add " + tokens.host() + " to the credentials file to allow it");
  CHECK(tokens.TokenAuthorizations() == std::vector<std::string>{""});
}

TEST_CASE("oci realm: a token realm on another host gets the credentials configured for it",
          "[oci][auth][realm]") {
  HostileRegistry tokens("127.0.0.2", "", /*require_auth=*/true);
  HostileRegistry registry("127.0.0.1", tokens.Url("/token"));
  TempDir dir;
  SECTION("an entry for HOST:PORT") {
    auto m = GetTokened(registry, WriteConfig(dir, {registry.host(), tokens.host()}));
    INFO(m.status().ToString());
    REQUIRE(m.ok());
  }
  SECTION("an entry for HOST") {
    auto m = GetTokened(registry, WriteConfig(dir, {registry.host(), "127.0.0.2"}));
    INFO(m.status().ToString());
    REQUIRE(m.ok());
  }
  SECTION("an entry for the realm's host alone, none for the registry") {
    auto m = GetTokened(registry, WriteConfig(dir, {"other.example:1", tokens.host()}));
    INFO(m.status().ToString());
    REQUIRE(m.ok());
  }
  // Its own credentials, never the registry's password.
  CHECK(tokens.TokenAuthorizations() ==
        std::vector<std::string>{std::string("Basic ") + kRealmAuth});
}

TEST_CASE("oci realm: a token realm on the registry's host, at another port, gets its credentials",
          "[oci][auth][realm]") {
  HostileRegistry tokens("127.0.0.1", "", /*require_auth=*/true);
  HostileRegistry registry("127.0.0.1", tokens.Url("/token"));
  TempDir dir;
  auto m = GetTokened(registry, WriteConfig(dir, {registry.host()}));
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  CHECK(tokens.TokenAuthorizations() ==
        std::vector<std::string>{std::string("Basic ") + kRegistryAuth});
}

}  // namespace
}  // namespace carton::oci
