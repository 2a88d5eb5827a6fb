// `carton pull` (the built binary, $CARTON_BIN) against the hostile
// registry on 127.0.0.1: an endless manifest is cut off at 4 MiB, a
// dripped one ends at CARTON_HTTP_TIMEOUT, and a token realm on another
// host (127.0.0.2) receives none of the registry's credentials.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "oci/hostile_registry_testing.h"
#include "testing.h"

namespace {

using carton::testing::HostileRegistry;
using carton::testing::Run;
using carton::testing::TempDir;
using Clock = std::chrono::steady_clock;

std::string Q(const std::string& s) { return "'" + s + "'"; }

// `carton pull` of `ref` into the scratch directory, with its own cache and
// HOME, the credentials in `config_json`, and `env` ("NAME=VALUE ..."). A
// client that never stops is stopped after 60 s.
carton::testing::CommandResult Pull(const TempDir& tmp, const std::string& ref,
                                    const std::string& config_json, const std::string& env = "") {
  const std::string bin = carton::testing::CartonBin();
  INFO("the carton binary (build carton_cli first): " << bin);
  REQUIRE(std::filesystem::exists(bin));
  carton::testing::WriteBytes(tmp.file("config.json"), carton::AsBytes(config_json));
  return Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " HOME=" + Q(tmp.path().string()) + " " +
             env + " timeout 60 " + Q(bin) + " pull -q --registry-config " +
             Q(tmp.file("config.json")) + " " + ref + " -o " + Q(tmp.file("out.carton")));
}

TEST_CASE("oci hostile cli: pull stops reading a manifest that never ends at 4 MiB",
          "[oci][hostile][limit][cli]") {
  HostileRegistry registry("127.0.0.1");
  TempDir tmp;
  auto r = Pull(tmp, "oci://" + registry.host() + "/endless:v1", "{\"auths\": {}}");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("/endless: manifest v1: larger than the limit of 4194304 bytes") !=
        std::string::npos);
  const std::int64_t sent = registry.BytesSent("endless");
  INFO("the registry sent " << sent << " bytes");
  CHECK(sent > 0);
  CHECK(sent < (std::int64_t{32} << 20));
}

TEST_CASE("oci hostile cli: pull gives up on a dripped manifest at CARTON_HTTP_TIMEOUT",
          "[oci][hostile][deadline][cli]") {
  HostileRegistry registry("127.0.0.1");
  TempDir tmp;
  const auto start = Clock::now();
  auto r = Pull(tmp, "oci://" + registry.host() + "/drip:v1", "{\"auths\": {}}",
                "CARTON_HTTP_TIMEOUT=2");
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  INFO(r.err << took << " s");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(registry.Url("/v2/drip/manifests/v1") +
                   ": no complete answer within 2 s (CARTON_HTTP_TIMEOUT)") != std::string::npos);
  CHECK(took < 10);
}

TEST_CASE("oci hostile cli: pull sends no registry password to a token realm on another host",
          "[oci][auth][realm][cli]") {
  HostileRegistry tokens("127.0.0.2");
  HostileRegistry registry("127.0.0.1", tokens.Url("/token"));
  TempDir tmp;
  // base64("alice:wonderland")
  auto r =
      Pull(tmp, "oci://" + registry.host() + "/tokened:v1",
           "{\"auths\": {\"" + registry.host() + "\": {\"auth\": \"YWxpY2U6d29uZGVybGFuZA==\"}}}");
  INFO(r.err);
  // The manifest is not a carton's; the token request is what matters.
  CHECK(r.exit_code != 0);
  CHECK(tokens.TokenAuthorizations() == std::vector<std::string>{""});
}

}  // namespace
