// Signatures through an OCI registry (Debian's docker-registry 2.8.2 on
// 127.0.0.1, which has no referrers API: the tag schema is used): push a
// signed carton, in both forms, and pull it with its signature; pull
// after the referrer is removed; verify oci:// with --key.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/manifest/sha256.h"
#include "registry_testing.h"
#include "sign/sign_testing.h"
#include "testing.h"

using namespace carton::testing;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// The CLI with a cache and a home of its own.
std::string Carton(const TempDir& tmp) {
  return "CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " HOME=" + Q(tmp.path().string()) + " " +
         CartonBin();
}

std::string PackSigned(const TempDir& tmp, const std::string& name, const std::string& key) {
  const std::string dir = tmp.file(name);
  WriteText(dir + "/carton.toml",
            "spec_version = 1\nmodel_name = \"" + name +
                "\"\n[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
                "runner_compat_version = 1\n");
  WriteText(dir + "/model/w.bin", Noise(20000, 3));
  const std::string out = tmp.file(name + ".carton");
  REQUIRE(Run(CartonBin() + " pack -q " + Q(dir) + " -o " + Q(out)).exit_code == 0);
  auto s = Run(CartonBin() + " sign -q " + Q(out) + " --key " + Q(key));
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  return out;
}

// GET of a registry path, the body.
std::string Get(const RegistryServer& r, const std::string& path,
                const std::string& accept = "application/vnd.oci.image.index.v1+json") {
  return Run("curl -sf -H 'Accept: " + accept + "' http://" + r.host() + path).out;
}

}  // namespace

TEST_CASE("cli: push sends a signature beside the carton as a referrer; pull brings it back",
          "[cli][sign][oci]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string m = PackSigned(tmp, "m", Pki("p256.key"));
  for (const char* format : {"carton", "modelpack"}) {
    INFO(format);
    const std::string ref = registry.Ref(std::string("team/m:") + format);
    auto push = Run(Carton(tmp) + " push --format " + format + " " + Q(m) + " " + Q(ref));
    INFO(push.err);
    REQUIRE(push.exit_code == 0);
    const std::string digest = push.out.substr(0, push.out.find('\n'));
    const std::string hex = digest.substr(7);
    CHECK_THAT(push.err, Catch::Contains("its signature as the referrer sha256:"));
    CHECK_THAT(push.err, Catch::Contains("(indexed by the tag sha256-" + hex + ")"));
    // cosign v3's layout, in the tag schema's index.
    const Json index = Json::parse(Get(registry, "/v2/team/m/manifests/sha256-" + hex));
    REQUIRE(index["manifests"].size() == 1);
    const Json& entry = index["manifests"][0];
    CHECK(entry["artifactType"] == "application/vnd.dev.sigstore.bundle.v0.3+json");
    CHECK(entry["annotations"]["dev.sigstore.bundle.predicateType"] ==
          "https://model_signing/signature/v1.0");
    const Json referrer =
        Json::parse(Get(registry, "/v2/team/m/manifests/" + entry["digest"].get<std::string>(),
                        "application/vnd.oci.image.manifest.v1+json"));
    CHECK(referrer["artifactType"] == "application/vnd.dev.sigstore.bundle.v0.3+json");
    CHECK(referrer["config"]["mediaType"] == "application/vnd.oci.empty.v1+json");
    REQUIRE(referrer["layers"].size() == 1);
    CHECK(referrer["layers"][0]["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json");
    CHECK(referrer["layers"][0]["digest"] ==
          carton::manifest::DigestString(
              carton::manifest::Sha256Of(carton::AsBytes(FileBytes(m + ".sig")))));
    CHECK(referrer["subject"]["digest"] == digest);
    CHECK(referrer["annotations"]["dev.sigstore.bundle.content"] == "dsse-envelope");
    // Pull writes it beside the carton, and it verifies.
    const std::string out = tmp.file(std::string("pulled-") + format + ".carton");
    auto pull = Run(Carton(tmp) + " pull " + Q(ref) + " -o " + Q(out));
    INFO(pull.err);
    REQUIRE(pull.exit_code == 0);
    CHECK(FileBytes(out + ".sig") == FileBytes(m + ".sig"));
    auto verify = Run(Carton(tmp) + " verify " + Q(out) + " --key " + Q(Pki("p256.pub")));
    INFO(verify.err);
    CHECK(verify.exit_code == 0);
    // verify oci:// finds the referrer itself.
    auto remote = Run(Carton(tmp) + " verify " + Q(ref) + " --key " + Q(Pki("p256.pub")));
    INFO(remote.err);
    CHECK(remote.exit_code == 0);
    CHECK_THAT(remote.out,
               Catch::Contains("signed by key " + ReadPublicKey(Pki("p256.pub")).hint()));
  }
}

TEST_CASE("cli: pull without the referrer writes no signature; verify then refuses",
          "[cli][sign][oci]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string m = PackSigned(tmp, "m", Pki("p256.key"));
  const std::string ref = registry.Ref("team/m:v1");
  auto push = Run(Carton(tmp) + " push -q " + Q(m) + " " + Q(ref));
  REQUIRE(push.exit_code == 0);
  const std::string hex = push.out.substr(7, 64);
  const std::string out = tmp.file("out.carton");
  REQUIRE(Run(Carton(tmp) + " pull -q " + Q(ref) + " -o " + Q(out)).exit_code == 0);
  REQUIRE(fs::exists(out + ".sig"));
  // The referrer goes; the index still names it.
  const Json index = Json::parse(Get(registry, "/v2/team/m/manifests/sha256-" + hex));
  const std::string referrer = index["manifests"][0]["digest"];
  REQUIRE(Run("curl -sf -X DELETE http://" + registry.host() + "/v2/team/m/manifests/" + referrer)
              .exit_code == 0);
  auto pull = Run(Carton(tmp) + " pull " + Q(ref) + " -o " + Q(out));
  INFO(pull.err);
  REQUIRE(pull.exit_code == 0);
  CHECK_FALSE(fs::exists(out + ".sig"));  // the one from before is gone too
  CHECK_THAT(pull.err, Catch::Contains("not found"));
  auto verify = Run(Carton(tmp) + " verify " + Q(out) + " --key " + Q(Pki("p256.pub")));
  CHECK(verify.exit_code == 1);
  CHECK_THAT(verify.err, Catch::Contains("not signed"));
  auto remote = Run(Carton(tmp) + " verify " + Q(ref) + " --key " + Q(Pki("p256.pub")));
  CHECK(remote.exit_code == 1);
  CHECK_THAT(remote.err,
             Catch::Contains("the registry has no signature of this carton's manifest"));
}

TEST_CASE("cli: the newest signature is pulled; one that is not the carton's stops the push",
          "[cli][sign][oci]") {
  RegistryServer registry;
  TempDir tmp;
  const std::string m = PackSigned(tmp, "m", Pki("p256.key"));
  const std::string ref = registry.Ref("team/m:v1");
  REQUIRE(Run(Carton(tmp) + " push -q " + Q(m) + " " + Q(ref)).exit_code == 0);
  // Created annotations have whole seconds.
  sleep(1);
  REQUIRE(Run(CartonBin() + " sign -q " + Q(m) + " --key " + Q(Pki("p384.key"))).exit_code == 0);
  REQUIRE(Run(Carton(tmp) + " push -q " + Q(m) + " " + Q(ref)).exit_code == 0);
  const std::string out = tmp.file("out.carton");
  REQUIRE(Run(Carton(tmp) + " pull -q " + Q(ref) + " -o " + Q(out)).exit_code == 0);
  CHECK(FileBytes(out + ".sig") == FileBytes(m + ".sig"));
  CHECK(Run(Carton(tmp) + " verify -q " + Q(out) + " --key " + Q(Pki("p384.pub"))).exit_code == 0);
  // Another carton's signature beside this one: nothing is pushed.
  const std::string other = PackSigned(tmp, "other", Pki("p256.key"));
  fs::copy_file(other + ".sig", m + ".sig", fs::copy_options::overwrite_existing);
  const int manifests_before = registry.Requests("PUT", "/manifests/");
  auto refused = Run(Carton(tmp) + " push " + Q(m) + " " + Q(registry.Ref("team/m:v2")));
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::Contains(m + ".sig: not the signature of " + m));
  CHECK(registry.Requests("PUT", "/manifests/") == manifests_before);
}
