#include "sign_testing.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "carton/sign/signer.h"

namespace carton::testing {

std::string OmsPath(std::string_view rel) {
  return std::string(CARTON_SOURCE_DIR) + "/tests/sign/oms/" + std::string(rel);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const std::string& PkiDir() {
  static const auto* dir = [] {
    auto* d = new TempDir();  // lives until exit: every test may use it
    const std::string script = std::string(CARTON_SOURCE_DIR) + "/tests/sign/make_pki.sh";
    const CommandResult r = Run("bash " + script + " " + d->path().string() + " 2>&1");
    if (r.exit_code != 0) throw std::runtime_error("make_pki.sh failed: " + r.out + r.err);
    return d;
  }();
  static const std::string path = dir->path().string();
  return path;
}

std::string Pki(std::string_view name) { return PkiDir() + "/" + std::string(name); }

sign::PublicKey ReadPublicKey(const std::string& path) {
  auto k = sign::PublicKey::ReadFile(path);
  INFO(k.status().ToString());
  REQUIRE(k.ok());
  return *k;
}

std::vector<sign::Certificate> ReadCertificates(const std::string& path) {
  auto c = sign::Certificate::ReadPemFile(path);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return *c;
}

sign::TrustedSigners TrustKey(const std::string& pub_path) {
  sign::TrustedSigners t;
  t.keys.push_back(ReadPublicKey(pub_path));
  return t;
}

sign::TrustedSigners TrustRoots(const std::string& pem_path) {
  sign::TrustedSigners t;
  t.roots = ReadCertificates(pem_path);
  return t;
}

sign::Statement SmallStatement() {
  std::vector<sign::Resource> r = {
      {"carton.toml", manifest::Sha256Of(AsBytes("a"))},
      {"model/w.bin", manifest::Sha256Of(AsBytes("b"))},
  };
  return sign::MakeStatement("tiny", std::move(r), {".git", "MANIFEST", "model.sig"});
}

std::string SignedBundleJson(const std::string& key_path, const std::string& cert_path,
                             const std::string& chain_path) {
  auto id = sign::LoadSigningIdentity(key_path, cert_path, chain_path, {});
  INFO(id.status().ToString());
  REQUIRE(id.ok());
  auto b = sign::SignStatement(SmallStatement(), *id);
  REQUIRE(b.ok());
  return sign::BundleJson(*b);
}

void ExpectFailure(const Status& s, StatusCode code, sign::Failure failure, std::string_view part) {
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK(sign::FailureName(sign::FailureOf(s)) == sign::FailureName(failure));
  CHECK_THAT(s.message(), Catch::Contains(std::string(part)));
}

}  // namespace carton::testing
