// keygen, sign, and verify and info with signatures, through the built
// CLI. Keys and certificates come from tests/sign/make_pki.sh; the folder
// the reference signed is the OMS vectors' (tests/sign/oms/).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sign/sign_testing.h"
#include "testing.h"

using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

std::string Bin() { return CartonBin(); }
std::string Q(const std::string& s) { return "'" + s + "'"; }

// A packed carton of two files under model/.
std::string PackModel(const TempDir& tmp, const std::string& name) {
  const std::string dir = tmp.file(name);
  WriteText(dir + "/carton.toml",
            "spec_version = 1\nmodel_name = \"" + name +
                "\"\n[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
                "runner_compat_version = 1\n");
  WriteText(dir + "/model/a.txt", "hello\n");
  WriteText(dir + "/model/w.bin", std::string(5000, 'w'));
  const std::string out = tmp.file(name + ".carton");
  auto r = Run(Bin() + " pack --compression stored -q " + Q(dir) + " -o " + Q(out));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

CommandResult Sign(const std::string& carton, const std::string& key,
                   const std::string& more = "") {
  return Run(Bin() + " sign " + Q(carton) + " --key " + Q(key) + " " + more);
}

}  // namespace

TEST_CASE("cli: keygen writes a P-256 pair, the private key 0600, and never replaces one",
          "[cli][sign]") {
  TempDir tmp;
  const std::string key = tmp.file("release.pem");
  auto r = Run(Bin() + " keygen -o " + Q(key));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  struct stat st {};
  REQUIRE(stat(key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(fs::exists(tmp.file("release.pub")));
  const std::string hint = ReadPublicKey(tmp.file("release.pub")).hint();
  CHECK(r.out == "key " + hint + "\n");
  CHECK(ReadPublicKey(tmp.file("release.pub")).curve() == carton::sign::Curve::kP256);
  CHECK(Run("openssl pkey -in " + Q(key) + " -noout -text 2>&1 | grep -c prime256v1").out == "1\n");
  // The private key is never printed.
  CHECK(r.out.find("PRIVATE") == std::string::npos);
  CHECK(r.err.find("PRIVATE") == std::string::npos);
  const std::string before = FileBytes(key);
  auto again = Run(Bin() + " keygen -o " + Q(key));
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.err, Catch::Contains("carton keygen: " + key + ": exists; not replaced"));
  CHECK(FileBytes(key) == before);
  auto p384 = Run(Bin() + " keygen --json --curve p384 -o " + Q(tmp.file("k384.key")));
  REQUIRE(p384.exit_code == 0);
  const auto j = nlohmann::json::parse(p384.out);
  CHECK(j["curve"] == "P-384");
  CHECK(j["public_key"] == tmp.file("k384.pub"));
}

TEST_CASE("cli: sign then verify --key; the wrong key, and no signature, exit 1", "[cli][sign]") {
  TempDir tmp;
  const std::string m = PackModel(tmp, "m");
  auto s = Sign(m, Pki("p256.key"));
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  CHECK(s.out == m + ".sig\n");
  CHECK_THAT(s.err, Catch::Contains("signed " + m + " (4 files) with key "));
  const std::string hint = ReadPublicKey(Pki("p256.pub")).hint();
  auto ok = Run(Bin() + " verify " + Q(m) + " --key " + Q(Pki("p256.pub")));
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  // The line verify prints without a key, with the signer added.
  const std::string plain_line = Run(Bin() + " verify " + Q(m)).out;
  REQUIRE(plain_line.ends_with(")\n"));
  CHECK(ok.out == plain_line.substr(0, plain_line.size() - 2) + "; signed by key " + hint + ")\n");
  auto wrong = Run(Bin() + " verify " + Q(m) + " --key " + Q(Pki("p384.pub")));
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.out.empty());
  CHECK_THAT(wrong.err,
             Catch::Contains("carton verify: " + m + ": " + m + ".sig: signed by key \"" + hint +
                             "\", which is not a trusted key"));
  // Without --key or --ca, verify is what it always was.
  auto plain = Run(Bin() + " verify " + Q(m));
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find("signed") == std::string::npos);
  fs::remove(m + ".sig");
  auto unsigned_ = Run(Bin() + " verify " + Q(m) + " --key " + Q(Pki("p256.pub")));
  CHECK(unsigned_.exit_code == 1);
  CHECK_THAT(unsigned_.err, Catch::Contains(m + ": not signed (no " + m + ".sig)"));
  auto missing = Run(Bin() + " verify " + Q(m) + " --key " + Q(Pki("p256.pub")) + " --signature " +
                     Q(tmp.file("none.sig")));
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("none.sig: no such signature file"));
  auto lonely = Run(Bin() + " verify " + Q(m) + " --identity x@example.com");
  CHECK(lonely.exit_code == 2);
  CHECK_THAT(lonely.err, Catch::Contains("need --key or --ca"));
}

TEST_CASE("cli: a tampered byte, a swapped MANIFEST, a carton re-signed by another key: exit 1",
          "[cli][sign]") {
  TempDir tmp;
  const std::string m = PackModel(tmp, "m");
  REQUIRE(Sign(m, Pki("p256.key")).exit_code == 0);
  const std::string trust = " --key " + Q(Pki("p256.pub"));
  // Every file of the carton, one byte changed each time.
  for (const std::string& needle :
       {std::string("hello\n"), std::string(5000, 'w'), std::string("model_name")}) {
    INFO(needle.substr(0, 10));
    std::string bytes = FileBytes(m);
    const std::size_t at = bytes.find(needle);
    REQUIRE(at != std::string::npos);
    bytes[at + 1] ^= 1;
    const std::string t = tmp.file("t.carton");
    WriteBytes(t, carton::AsBytes(bytes));
    fs::copy_file(m + ".sig", t + ".sig", fs::copy_options::overwrite_existing);
    auto r = Run(Bin() + " verify " + Q(t) + trust);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("sha256"));
  }
  // Another carton (its files and MANIFEST) under the same signature.
  const std::string other = PackModel(tmp, "other");
  fs::copy_file(m + ".sig", other + ".sig");
  auto swapped = Run(Bin() + " verify " + Q(other) + trust);
  CHECK(swapped.exit_code == 1);
  CHECK_THAT(swapped.err, Catch::Contains("carton.toml: sha256"));
  CHECK_THAT(swapped.err, Catch::Contains("but the signature says"));
  // Re-signed by a key nobody trusts.
  REQUIRE(Sign(m, Pki("p521.key")).exit_code == 0);
  auto resigned = Run(Bin() + " verify " + Q(m) + trust);
  CHECK(resigned.exit_code == 1);
  CHECK_THAT(resigned.err, Catch::Contains("which is not a trusted key"));
}

TEST_CASE("cli: a certificate chain signs; verify --ca checks it, --identity the leaf",
          "[cli][sign]") {
  TempDir tmp;
  const std::string m = PackModel(tmp, "m");
  auto s =
      Sign(m, Pki("leaf.key"), "--cert " + Q(Pki("leaf.pem")) + " --chain " + Q(Pki("int.pem")));
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  auto ok = Run(Bin() + " verify " + Q(m) + " --ca " + Q(Pki("root.pem")) +
                " --identity release@example.com");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("signed by \"CN=release\""));
  auto other = Run(Bin() + " verify " + Q(m) + " --ca " + Q(Pki("other-root.pem")));
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.err, Catch::Contains("does not lead to a trusted root"));
  auto who = Run(Bin() + " verify " + Q(m) + " --ca " + Q(Pki("root.pem")) +
                 " --identity ops@example.com");
  CHECK(who.exit_code == 1);
  CHECK_THAT(who.err, Catch::Contains("none of the identities asked for"));
  REQUIRE(Sign(m, Pki("expired.key"),
               "--cert " + Q(Pki("expired.pem")) + " --chain " + Q(Pki("int.pem")))
              .exit_code == 0);
  auto expired = Run(Bin() + " verify " + Q(m) + " --ca " + Q(Pki("root.pem")));
  CHECK(expired.exit_code == 1);
  CHECK_THAT(expired.err, Catch::Contains("certificate has expired"));
}

TEST_CASE("cli: sign refuses a key others may read, and asks an encrypted key's passphrase",
          "[cli][sign]") {
  TempDir tmp;
  const std::string m = PackModel(tmp, "m");
  const std::string key = tmp.file("k.pem");
  fs::copy_file(Pki("p256.key"), key);
  chmod(key.c_str(), 0644);
  auto open = Sign(m, key);
  CHECK(open.exit_code == 2);
  CHECK_THAT(open.err, Catch::Contains("permissions 0644 are too open"));
  CHECK_FALSE(fs::exists(m + ".sig"));
  const std::string locked = tmp.file("locked.pem");
  REQUIRE(Run("CARTON_KEY_PASSPHRASE=s3cret " + Bin() + " keygen --encrypt -o " + Q(locked))
              .exit_code == 0);
  CHECK_THAT(FileBytes(locked), Catch::Contains("ENCRYPTED PRIVATE KEY"));
  auto no_pass = Run("env -u CARTON_KEY_PASSPHRASE setsid " + Bin() + " sign " + Q(m) + " --key " +
                     Q(locked) + " < /dev/null");
  CHECK(no_pass.exit_code == 2);
  CHECK_THAT(no_pass.err, Catch::Contains("set CARTON_KEY_PASSPHRASE"));
  auto wrong = Run("CARTON_KEY_PASSPHRASE=nope " + Bin() + " sign " + Q(m) + " --key " + Q(locked));
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("wrong passphrase"));
  auto right = Run("CARTON_KEY_PASSPHRASE=s3cret " + Bin() + " sign " + Q(m) + " --key " +
                   Q(locked) + " -o " + Q(tmp.file("elsewhere.sig")));
  INFO(right.err);
  CHECK(right.exit_code == 0);
  CHECK(fs::exists(tmp.file("elsewhere.sig")));
  CHECK(Run(Bin() + " verify " + Q(m) + " --key " + Q(tmp.file("locked.pub")) + " --signature " +
            Q(tmp.file("elsewhere.sig")))
            .exit_code == 0);
}

TEST_CASE("cli: verify checks any folder: an unpacked carton, and one the reference signed",
          "[cli][sign]") {
  TempDir tmp;
  const std::string m = PackModel(tmp, "m");
  REQUIRE(Sign(m, Pki("p256.key")).exit_code == 0);
  const std::string dir = tmp.file("u");
  REQUIRE(Run(Bin() + " unpack -q " + Q(m) + " " + Q(dir)).exit_code == 0);
  CHECK(fs::exists(dir + "/model.sig"));
  auto ok = Run(Bin() + " verify " + Q(dir) + " --key " + Q(Pki("p256.pub")));
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains(dir + ": ok (4 files, "));
  WriteText(dir + "/model/new.txt", "x");
  auto extra = Run(Bin() + " verify " + Q(dir) + " --key " + Q(Pki("p256.pub")));
  CHECK(extra.exit_code == 1);
  CHECK_THAT(extra.err, Catch::Contains("model/new.txt: not signed"));
  // The OMS vectors: a P-384 key and a certificate chain, signed by the reference tool.
  auto key = Run(Bin() + " verify " + Q(OmsPath("models/model")) + " --signature " +
                 Q(OmsPath("test-vectors/v1.0/valid/key.bundle.json")) + " --key " +
                 Q(OmsPath("keys/signing-key-pub.pem")));
  INFO(key.err);
  CHECK(key.exit_code == 0);
  CHECK_THAT(key.out,
             Catch::Contains(
                 "signed by key e8450dec4eb99dae995da9af1bc2cc9f76ed669ee2e744f57abba763df3e3f8e"));
  auto cert = Run(Bin() + " verify --json " + Q(OmsPath("models/model")) + " --signature " +
                  Q(OmsPath("test-vectors/v1.0/valid/certificate.bundle.json")) + " --ca " +
                  Q(OmsPath("keys/ca-cert.pem")));
  CHECK(cert.exit_code == 0);
  const auto j = nlohmann::json::parse(cert.out);
  CHECK(j["signature"]["signed_by"]["subject"] == "CN=intermediate-ca");
  auto keyless = Run(Bin() + " verify " + Q(OmsPath("models/v1.1.0-sigstore")) + " --signature " +
                     Q(OmsPath("test-vectors/v1.0/valid/sigstore.bundle.json")) + " --ca " +
                     Q(OmsPath("keys/ca-cert.pem")));
  CHECK(keyless.exit_code == 1);
  CHECK_THAT(keyless.err, Catch::Contains("keyless (sigstore) bundles are not supported yet"));
  auto trap =
      Run(Bin() + " verify " + Q(OmsPath("models/model")) + " --signature " +
          Q(OmsPath("test-vectors/v1.0/invalid/missing-verification-material.bundle.json")) +
          " --key " + Q(OmsPath("keys/signing-key-pub.pem")));
  CHECK(trap.exit_code == 1);
  CHECK_THAT(trap.err, Catch::Contains("verificationMaterial: missing"));
}

TEST_CASE("cli: info shows who a signature beside the carton names", "[cli][sign]") {
  TempDir tmp;
  const std::string m = PackModel(tmp, "m");
  auto before = Run(Bin() + " info " + Q(m));
  REQUIRE(before.exit_code == 0);
  CHECK(before.out.find("signed") == std::string::npos);
  CHECK(nlohmann::json::parse(Run(Bin() + " info --json " + Q(m)).out)["signature"].is_null());
  REQUIRE(Sign(m, Pki("p256.key")).exit_code == 0);
  auto after = Run(Bin() + " info " + Q(m));
  REQUIRE(after.exit_code == 0);
  CHECK_THAT(after.out, Catch::Contains("signed by: key " + ReadPublicKey(Pki("p256.pub")).hint() +
                                        " (" + m + ".sig; not checked"));
  const auto j = nlohmann::json::parse(Run(Bin() + " info --json " + Q(m)).out);
  CHECK(j["signature"]["covers_manifest"] == true);
  CHECK(j["signature"]["method"] == "key");
  // A signature of another carton is said not to hold.
  const std::string other = PackModel(tmp, "other");
  fs::copy_file(m + ".sig", other + ".sig");
  CHECK_THAT(Run(Bin() + " info " + Q(other)).out, Catch::Contains("does not hold: "));
}
