// Keys: the three curves, PEM in and out, passphrases, file modes.
#include "carton/sign/keys.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/sign/failure.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;

namespace {

sign::PassphraseFn Gives(std::string pass, int* asked = nullptr) {
  return [pass, asked](const std::string&) -> Result<std::string> {
    if (asked != nullptr) ++*asked;
    return pass;
  };
}

}  // namespace

TEST_CASE("sign: keys on P-256, P-384 and P-521 sign and verify", "[sign][keys]") {
  for (sign::Curve c : {sign::Curve::kP256, sign::Curve::kP384, sign::Curve::kP521}) {
    INFO(sign::CurveName(c));
    auto key = sign::PrivateKey::Generate(c);
    REQUIRE(key.ok());
    CHECK(key->curve() == c);
    auto sig = key->Sign(AsBytes("message"));
    REQUIRE(sig.ok());
    CHECK(key->public_key().Verify(AsBytes("message"), *sig));
    CHECK_FALSE(key->public_key().Verify(AsBytes("messagE"), *sig));
    auto other = sign::PrivateKey::Generate(c);
    REQUIRE(other.ok());
    CHECK_FALSE(other->public_key().Verify(AsBytes("message"), *sig));
    // The PEM round trip keeps the key and its hint.
    auto pem = key->ToPem();
    REQUIRE(pem.ok());
    auto back = sign::PrivateKey::FromPem(*pem, "k.pem", {});
    REQUIRE(back.ok());
    CHECK(back->public_key() == key->public_key());
    auto pub = sign::PublicKey::FromPem(key->public_key().pem(), "k.pub");
    REQUIRE(pub.ok());
    CHECK(pub->hint() == key->public_key().hint());
    auto der = sign::PublicKey::FromDer(key->public_key().der(), "der");
    REQUIRE(der.ok());
    CHECK(der->pem() == key->public_key().pem());
  }
}

TEST_CASE("sign: the hint is the sha256 of the PEM SubjectPublicKeyInfo text", "[sign][keys]") {
  auto k = sign::PublicKey::ReadFile(OmsPath("keys/signing-key-pub.pem"));
  REQUIRE(k.ok());
  CHECK(k->curve() == sign::Curve::kP384);
  CHECK(k->hint() == "e8450dec4eb99dae995da9af1bc2cc9f76ed669ee2e744f57abba763df3e3f8e");
  const CommandResult r =
      Run("openssl pkey -pubin -in " + Pki("p256.pub") + " -pubout | sha256sum");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.substr(0, 64) == ReadPublicKey(Pki("p256.pub")).hint());
}

TEST_CASE("sign: other key types and curves are refused as unsupported", "[sign][keys]") {
  TempDir tmp;
  REQUIRE(Run("openssl genpkey -algorithm ED25519 -out " + tmp.file("ed.key") +
              " 2>/dev/null && openssl pkey -in " + tmp.file("ed.key") + " -pubout -out " +
              tmp.file("ed.pub") +
              " && openssl genpkey -algorithm EC -pkeyopt "
              "ec_paramgen_curve:secp256k1 -out " +
              tmp.file("k1.key") +
              " 2>/dev/null && "
              "openssl pkey -in " +
              tmp.file("k1.key") + " -pubout -out " + tmp.file("k1.pub"))
              .exit_code == 0);
  auto ed = sign::PublicKey::ReadFile(tmp.file("ed.pub"));
  REQUIRE_FALSE(ed.ok());
  CHECK(ed.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(ed.status().message(), Catch::Contains("only ECDSA keys on P-256, P-384 and P-521"));
  auto k1 = sign::PublicKey::ReadFile(tmp.file("k1.pub"));
  REQUIRE_FALSE(k1.ok());
  CHECK(k1.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(k1.status().message(), Catch::Contains("secp256k1"));
  auto not_pem = sign::PublicKey::FromPem("hello", "x.pub");
  REQUIRE_FALSE(not_pem.ok());
  CHECK(not_pem.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(not_pem.status().message(), Catch::Contains("x.pub: not a PEM public key"));
}

TEST_CASE("sign: a private key readable by group or others is refused, as ssh does",
          "[sign][keys]") {
  TempDir tmp;
  const std::string path = tmp.file("k.pem");
  std::filesystem::copy_file(Pki("p256.key"), path);
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    INFO(mode);
    REQUIRE(chmod(path.c_str(), mode) == 0);
    auto k = sign::PrivateKey::ReadFile(path, {});
    REQUIRE_FALSE(k.ok());
    CHECK(k.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(k.status().message(), Catch::Contains("are too open"));
    CHECK_THAT(k.status().message(), Catch::Contains("chmod 600 " + path));
  }
  REQUIRE(chmod(path.c_str(), 0400) == 0);
  CHECK(sign::PrivateKey::ReadFile(path, {}).ok());
  auto missing = sign::PrivateKey::ReadFile(tmp.file("none.pem"), {});
  CHECK(missing.status().code() == StatusCode::kNotFound);
}

TEST_CASE("sign: an encrypted key asks for its passphrase, once, and only then", "[sign][keys]") {
  auto key = sign::PrivateKey::Generate(sign::Curve::kP256);
  REQUIRE(key.ok());
  auto locked = key->ToPem("s3cret");
  REQUIRE(locked.ok());
  CHECK_THAT(*locked, Catch::Contains("BEGIN ENCRYPTED PRIVATE KEY"));
  int asked = 0;
  auto open = sign::PrivateKey::FromPem(*locked, "k.pem", Gives("s3cret", &asked));
  REQUIRE(open.ok());
  CHECK(asked == 1);
  CHECK(open->public_key() == key->public_key());
  auto wrong = sign::PrivateKey::FromPem(*locked, "k.pem", Gives("nope"));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(wrong.status().message(), Catch::Contains("k.pem: wrong passphrase"));
  auto none = sign::PrivateKey::FromPem(*locked, "k.pem", {});
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.status().message(), Catch::Contains("encrypted, and no passphrase was given"));
  asked = 0;
  CHECK(sign::PrivateKey::FromPem(*key->ToPem(), "k.pem", Gives("x", &asked)).ok());
  CHECK(asked == 0);
  // The environment's passphrase, through DefaultPassphrase.
  ScopedEnv env("CARTON_KEY_PASSPHRASE", "s3cret");
  CHECK(sign::PrivateKey::FromPem(*locked, "k.pem", sign::DefaultPassphrase()).ok());
}

TEST_CASE("sign: a private key file is written 0600 and never replaces one", "[sign][keys]") {
  TempDir tmp;
  const std::string path = tmp.file("k.pem");
  auto key = sign::PrivateKey::Generate(sign::Curve::kP256);
  REQUIRE(key.ok());
  const mode_t old = umask(0);
  Status s = sign::WritePrivateKeyFile(path, *key->ToPem());
  umask(old);
  REQUIRE(s.ok());
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string before = FileBytes(path);
  Status again = sign::WritePrivateKeyFile(path, "other");
  CHECK(again.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(again.message(), Catch::Contains("exists; not replaced"));
  CHECK(FileBytes(path) == before);
  CHECK(ListDir(tmp.path().string()) == std::vector<std::string>{"k.pem"});
}
