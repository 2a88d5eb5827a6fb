// The trust policy: the file's rules, which scope applies, and the
// decision for a carton signed or not.
#include "carton/sign/policy.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/sign/failure.h"
#include "carton/sign/signer.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;
using sign::Failure;
using sign::TrustTarget;
namespace fs = std::filesystem;

namespace {

// A policy file in `dir` (with release.pub, team.pub and roots.pem beside
// it), parsed.
Result<std::shared_ptr<const sign::TrustPolicy>> Policy(const TempDir& dir,
                                                        const std::string& text) {
  for (auto [from, to] : {std::pair{"p256.pub", "release.pub"}, std::pair{"p384.pub", "team.pub"},
                          std::pair{"root.pem", "roots.pem"}}) {
    fs::copy_file(Pki(from), dir.file(to), fs::copy_options::overwrite_existing);
  }
  WriteText(dir.file("trust.toml"), text);
  return sign::TrustPolicy::ReadFile(dir.file("trust.toml"));
}

TrustTarget Oci(const std::string& registry, const std::string& repo) {
  TrustTarget t;
  t.kind = TrustTarget::Kind::kOci;
  t.registry = registry;
  t.repository = repo;
  return t;
}

TrustTarget Path(const std::string& p) {
  TrustTarget t;
  t.path = p;
  return t;
}

sign::Bundle Signed(const char* key) {
  auto b = sign::ParseBundle(AsBytes(SignedBundleJson(Pki(key))));
  REQUIRE(b.ok());
  return *b;
}

}  // namespace

TEST_CASE("sign: a policy's scopes: the longest matching prefix applies", "[sign][policy]") {
  TempDir dir;
  auto p = Policy(dir, R"(
require_signature = false
keys = ["release.pub"]
[[scope]]
registry = "Registry.Example.com/team"
require_signature = true
[[scope]]
registry = "registry.example.com/team/special"
keys = ["team.pub"]
[[scope]]
path = "/srv/models/"
require_signature = true
[[scope]]
url = "https://models.example.com/signed/"
require_signature = true
)");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  const auto& policy = **p;
  CHECK_FALSE(policy.RequiresSignature(Oci("other.example.com", "team/m")));
  CHECK(policy.RequiresSignature(Oci("registry.example.com", "team/m")));
  CHECK(policy.RequiresSignature(Oci("registry.example.com", "team")));
  CHECK_FALSE(policy.RequiresSignature(Oci("registry.example.com", "teamwork/m")));
  CHECK(policy.RequiresSignature(Path("/srv/models/a.carton")));
  CHECK_FALSE(policy.RequiresSignature(Path("/srv/models-old/a.carton")));
  TrustTarget url;
  url.kind = TrustTarget::Kind::kUrl;
  url.url = "https://models.example.com/signed/m.carton";
  CHECK(policy.RequiresSignature(url));
  url.url = "https://models.example.com/unsigned/m.carton";
  CHECK_FALSE(policy.RequiresSignature(url));
  // The special scope inherits require_signature from the top level (not
  // from the team scope it lies in) and trusts its own key only.
  const auto special = Oci("registry.example.com", "team/special/m");
  CHECK_FALSE(policy.RequiresSignature(special));
  const auto files = SmallStatement().resources;
  const sign::Bundle by_release = Signed("p256.key");
  const sign::Bundle by_team = Signed("p384.key");
  auto ok = policy.Check(special, &by_team, files);
  INFO(ok.status().ToString());
  REQUIRE(ok.ok());
  CHECK(ok->scope == "registry registry.example.com/team/special");
  REQUIRE(ok->signer);
  CHECK(ok->signer->key_hint == ReadPublicKey(Pki("p384.pub")).hint());
  ExpectFailure(policy.Check(special, &by_release, files).status(), StatusCode::kCorrupt,
                Failure::kUntrustedKey, "oci://registry.example.com/team/special/m: signed by key");
  CHECK(policy.Check(Oci("registry.example.com", "team/m"), &by_release, files).ok());
}

TEST_CASE("sign: a policy refuses the unsigned where it requires, and lets the rest be",
          "[sign][policy]") {
  TempDir dir;
  auto p = Policy(dir, "require_signature = true\nkeys = [\"release.pub\"]\n");
  REQUIRE(p.ok());
  const auto files = SmallStatement().resources;
  ExpectFailure((*p)->Check(Path("/m.carton"), nullptr, files).status(), StatusCode::kCorrupt,
                Failure::kUnsigned,
                "/m.carton: not signed, and the trust policy " + dir.file("trust.toml") +
                    " (default) requires a signature");
  const sign::Bundle b = Signed("p256.key");
  auto v = (*p)->Check(Path("/m.carton"), &b, files);
  REQUIRE(v.ok());
  CHECK(v->signature_required);
  // The carton's files must be exactly the signed ones.
  auto more = files;
  more.push_back({"model/extra.bin", manifest::Sha256Of(AsBytes("x"))});
  ExpectFailure((*p)->Check(Path("/m.carton"), &b, more).status(), StatusCode::kCorrupt,
                Failure::kNotCovered, "model/extra.bin: not signed");
  auto changed = files;
  changed[1].digest = manifest::Sha256Of(AsBytes("other"));
  ExpectFailure((*p)->Check(Path("/m.carton"), &b, changed).status(), StatusCode::kCorrupt,
                Failure::kNotCovered, "model/w.bin: sha256");
  // No policy requirement and no signer: a signature is not checked.
  TempDir open_dir;
  auto open = Policy(open_dir, "");
  REQUIRE(open.ok());
  auto unchecked = (*open)->Check(Path("/m.carton"), &b, more);
  REQUIRE(unchecked.ok());
  CHECK_FALSE(unchecked->signer);
  CHECK((*open)->Check(Path("/m.carton"), nullptr, files).ok());
}

TEST_CASE("sign: a bad policy file is refused with its line and column", "[sign][policy]") {
  TempDir dir;
  const std::pair<std::string, std::string> bad[] = {
      {"require_signatures = true\n", "trust.toml:1:22: unknown key \"require_signatures\""},
      {"keys = \"release.pub\"\n", "keys must be an array of strings"},
      {"require_signature = \"yes\"\n", "require_signature must be true or false"},
      {"require_signature = true\n", "requires a signature but trusts no key or CA"},
      {"keys = [\"missing.pub\"]\n", "missing.pub"},
      {"[[scope]]\nkeys = [\"release.pub\"]\n",
       "a scope names exactly one of registry, url and path"},
      {"[[scope]]\npath = \"relative/dir\"\n", "is not absolute"},
      {"[[scope]]\nurl = \"ftp://x/\"\n", "is not an http(s) URL"},
      {"[[scope]]\nregistry = \"r\"\nregistries = 1\n", "scope: unknown key \"registries\""},
      {"version = 2\n", "version must be 1"},
      {"keys = [\n", "trust.toml:1:10:"},
      {"a.b.c.d.e.f = 1\n", "dotted key has more than 4 parts"},
  };
  for (const auto& [text, part] : bad) {
    INFO(text);
    auto p = Policy(dir, text);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() != StatusCode::kInternal);
    CHECK_THAT(p.status().message(), Catch::Contains(part));
  }
}

TEST_CASE("sign: the default policy file: CARTON_TRUST_POLICY, else ~/.config/carton",
          "[sign][policy]") {
  TempDir home;
  ScopedEnv h("HOME", home.path().string());
  ScopedEnv x("XDG_CONFIG_HOME", "");
  {
    ScopedEnv none("CARTON_TRUST_POLICY", "");
    unsetenv("CARTON_TRUST_POLICY");
    auto p = sign::TrustPolicy::LoadDefault();
    REQUIRE(p.ok());
    CHECK(*p == nullptr);  // no file: no policy, nothing changes
    CHECK(sign::TrustPolicy::DefaultPath() == home.file(".config/carton/trust.toml"));
    WriteText(home.file(".config/carton/trust.toml"), "require_signature = false\n");
    auto found = sign::TrustPolicy::LoadDefault();
    REQUIRE(found.ok());
    REQUIRE(*found != nullptr);
    CHECK((*found)->path() == home.file(".config/carton/trust.toml"));
  }
  ScopedEnv named("CARTON_TRUST_POLICY", home.file("typo.toml"));
  auto missing = sign::TrustPolicy::LoadDefault();
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("CARTON_TRUST_POLICY"));
}
