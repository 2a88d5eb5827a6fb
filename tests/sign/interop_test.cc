// Bundles made here, checked by verifiers that share no code with carton:
// the openssl CLI over a PAE rebuilt by a Python script from the DSSE
// spec, the OMS JSON schemas (Debian's python3-jsonschema), and
// @sigstore/verify from npm (skipped, with a warning, where node or npm is
// missing or too old, or the package cannot be installed).
#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/common/atomic_file.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

const std::string kSignTests = std::string(CARTON_SOURCE_DIR) + "/tests/sign";
constexpr const char* kPython = "/usr/bin/python3";

std::string WriteBundle(const TempDir& dir, const std::string& name, const std::string& json) {
  const std::string path = dir.file(name);
  REQUIRE(WriteFileAtomically(path, AsBytes(json)).ok());
  return path;
}

// @sigstore/verify installed once per build tree, or "" (with the reason
// in `why`) when it cannot be.
std::string SigstoreModules(std::string* why) {
  const CommandResult node =
      Run("node -e 'const [a,b]=process.versions.node.split(\".\").map(Number);"
          "process.exit(a>20||(a==20&&b>=17)?0:1)' 2>&1");
  if (node.exit_code != 0) {
    *why = "node >= 20.17 is not on PATH";
    return "";
  }
  const char* tmp = std::getenv("CARTON_TEST_TMP");
  const std::string prefix =
      std::string(tmp ? tmp : CARTON_DEFAULT_TEST_TMP) + "/npm-sigstore-verify-3.1.1";
  const std::string modules = prefix + "/node_modules";
  if (!fs::exists(modules + "/@sigstore/verify/package.json")) {
    fs::create_directories(prefix);
    const CommandResult npm = Run("cd " + prefix +
                                  " && timeout 300 npm install --no-audit --no-fund "
                                  "--no-save @sigstore/verify@3.1.1 2>&1");
    if (npm.exit_code != 0) {
      *why = "npm install @sigstore/verify@3.1.1 failed: " + npm.out.substr(0, 300);
      return "";
    }
  }
  return modules;
}

}  // namespace

TEST_CASE("sign: the openssl CLI verifies carton's signatures over a PAE it rebuilds",
          "[sign][interop]") {
  TempDir tmp;
  const std::pair<const char*, const char*> keys[] = {
      {"p256", "-sha256"}, {"p384", "-sha384"}, {"p521", "-sha512"}};
  for (const auto& [curve, hash] : keys) {
    INFO(curve);
    const std::string bundle = WriteBundle(tmp, std::string(curve) + ".json",
                                           SignedBundleJson(Pki(std::string(curve) + ".key")));
    REQUIRE(Run(std::string(kPython) + " " + kSignTests + "/rebuild_pae.py " + bundle + " " +
                tmp.path().string())
                .exit_code == 0);
    const CommandResult ok =
        Run("openssl dgst " + std::string(hash) + " -verify " + Pki(std::string(curve) + ".pub") +
            " -signature " + tmp.file("sig.der") + " " + tmp.file("pae.bin"));
    CHECK(ok.out == "Verified OK\n");
    // One changed byte of the PAE, and the same check fails.
    std::string pae = FileBytes(tmp.file("pae.bin"));
    pae.back() ^= 1;
    REQUIRE(WriteFileAtomically(tmp.file("pae.bin"), AsBytes(pae)).ok());
    const CommandResult bad =
        Run("openssl dgst " + std::string(hash) + " -verify " + Pki(std::string(curve) + ".pub") +
            " -signature " + tmp.file("sig.der") + " " + tmp.file("pae.bin"));
    CHECK(bad.exit_code != 0);
  }
  // The certificate method: the leaf's key verifies, and openssl verifies the chain.
  const std::string bundle = WriteBundle(
      tmp, "cert.json", SignedBundleJson(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem")));
  REQUIRE(Run(std::string(kPython) + " " + kSignTests + "/rebuild_pae.py " + bundle + " " +
              tmp.path().string())
              .exit_code == 0);
  CHECK(Run("openssl dgst -sha256 -verify " + Pki("leaf.pub") + " -signature " +
            tmp.file("sig.der") + " " + tmp.file("pae.bin"))
            .out == "Verified OK\n");
}

TEST_CASE("sign: carton's bundles validate against the OMS JSON schemas", "[sign][interop]") {
  TempDir tmp;
  std::string files;
  for (const char* key : {"p256", "p384", "p521"}) {
    files += " " + WriteBundle(tmp, std::string(key) + ".json",
                               SignedBundleJson(Pki(std::string(key) + ".key")));
  }
  files += " " + WriteBundle(tmp, "cert.json",
                             SignedBundleJson(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem")));
  const CommandResult r = Run(std::string(kPython) + " " + kSignTests + "/check_oms_schema.py " +
                              OmsPath("schemas/v1.0") + files);
  INFO(r.out << r.err);
  if (r.exit_code == 2) {
    WARN("skipped: python3-jsonschema is not installed (scripts/install-deps.sh --test)");
    return;
  }
  CHECK(r.exit_code == 0);
  // The check itself refuses what the schemas refuse.
  const CommandResult bad = Run(
      std::string(kPython) + " " + kSignTests + "/check_oms_schema.py " + OmsPath("schemas/v1.0") +
      " " + OmsPath("test-vectors/v1.0/invalid-payload/wrong-predicate.bundle.json"));
  CHECK(bad.exit_code == 1);
}

TEST_CASE("sign: @sigstore/verify 3.1.1 verifies carton's P-256 bundle", "[sign][interop]") {
  std::string why;
  const std::string modules = SigstoreModules(&why);
  if (modules.empty()) {
    WARN("skipped: " << why);
    return;
  }
  TempDir tmp;
  const std::string bundle = WriteBundle(tmp, "b.json", SignedBundleJson(Pki("p256.key")));
  const std::string verify =
      "NODE_PATH=" + modules + " node " + kSignTests + "/sigstore_verify.js " + bundle;
  const CommandResult ok = Run(verify + " " + Pki("p256.pub"));
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out == "verified " + ReadPublicKey(Pki("p256.pub")).hint() + "\n");
  const CommandResult other = Run(verify + " " + Pki("p384.pub"));
  CHECK(other.exit_code == 1);
}
