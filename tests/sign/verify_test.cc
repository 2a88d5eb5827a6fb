// Verifying bundles: the OMS vectors as their README says, round trips on
// every curve and through a two-level certificate chain, and what each
// wrong signer gets.
#include "carton/sign/verify.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "carton/sign/bundle.h"
#include "carton/sign/failure.h"
#include "carton/sign/files.h"
#include "carton/sign/signer.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;
using sign::Failure;

namespace {

Result<sign::Bundle> ParseFile(const std::string& path) {
  return sign::ParseBundle(AsBytes(FileBytes(path)));
}

// The whole check of a vector: the bundle, its signer, and the model's files.
Status VerifyVector(const nlohmann::json& v) {
  CARTON_ASSIGN_OR_RETURN(sign::Bundle b, ParseFile(OmsPath(v["bundle"].get<std::string>())));
  sign::TrustedSigners t;
  if (v["key"].is_string()) t.keys.push_back(ReadPublicKey(OmsPath(v["key"].get<std::string>())));
  if (v["ca"].is_string()) t.roots = ReadCertificates(OmsPath(v["ca"].get<std::string>()));
  CARTON_RETURN_IF_ERROR(sign::VerifyBundle(b, t).status());
  sign::HashDirectoryOptions o;
  o.ignore_paths = b.statement.ignore_paths;
  CARTON_ASSIGN_OR_RETURN(auto present,
                          sign::HashDirectory(OmsPath(v["model"].get<std::string>()), o));
  const auto problems = sign::CompareFiles(b.statement.resources, present);
  return sign::ProblemsStatus(problems);
}

Result<sign::SignerInfo> SignAndVerify(const std::string& key, const std::string& cert,
                                       const std::string& chain,
                                       const sign::TrustedSigners& trusted) {
  CARTON_ASSIGN_OR_RETURN(sign::Bundle b,
                          sign::ParseBundle(AsBytes(SignedBundleJson(key, cert, chain))));
  return sign::VerifyBundle(b, trusted);
}

}  // namespace

TEST_CASE("sign: every OMS vector verifies or fails as its README says", "[sign][verify][oms]") {
  const auto index = nlohmann::json::parse(FileBytes(OmsPath("vectors.json")));
  int checked = 0;
  for (const auto& v : index["vectors"]) {
    const std::string name = v["bundle"].get<std::string>();
    const std::string verdict = v["verify"].get<std::string>();
    INFO(name << ": must " << verdict);
    const Status s = VerifyVector(v);
    INFO(s.ToString());
    if (verdict == "ok") {
      CHECK(s.ok());
    } else if (verdict == "keyless") {
      CHECK(s.code() == StatusCode::kUnsupported);
      CHECK_THAT(s.message(),
                 Catch::Contains("verificationMaterial.certificate: keyless (sigstore) "
                                 "bundles are not supported yet"));
    } else {
      CHECK_FALSE(s.ok());
      CHECK(s.code() != StatusCode::kInternal);
    }
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE("sign: the vectors' failures are the ones their README names", "[sign][verify][oms]") {
  ExpectFailure(
      ParseFile(OmsPath("test-vectors/v1.0/invalid/missing-verification-material.bundle.json"))
          .status(),
      StatusCode::kCorrupt, Failure::kBadBundle, "verificationMaterial: missing");
  ExpectFailure(
      ParseFile(OmsPath("test-vectors/v1.0/invalid/missing-envelope.bundle.json")).status(),
      StatusCode::kCorrupt, Failure::kBadBundle, "dsseEnvelope: missing");
  ExpectFailure(ParseFile(OmsPath("test-vectors/v1.0/invalid/empty.bundle.json")).status(),
                StatusCode::kCorrupt, Failure::kBadBundle, "bundle: not JSON");
  ExpectFailure(
      ParseFile(OmsPath("test-vectors/v1.0/invalid/missing-tlog-entries.bundle.json")).status(),
      StatusCode::kUnsupported, Failure::kUnsupported, "verificationMaterial.certificate");
  ExpectFailure(
      ParseFile(OmsPath("test-vectors/v1.0/invalid-payload/wrong-predicate.bundle.json")).status(),
      StatusCode::kCorrupt, Failure::kBadBundle, "payload.predicateType");
  // The certificate vector names the leaf's subject.
  auto cert = ParseFile(OmsPath("test-vectors/v1.0/valid/certificate.bundle.json"));
  REQUIRE(cert.ok());
  auto who = sign::VerifyBundle(*cert, TrustRoots(OmsPath("keys/ca-cert.pem")));
  REQUIRE(who.ok());
  CHECK(who->subject == "CN=intermediate-ca");
  // ... and fails against another root.
  ExpectFailure(sign::VerifyBundle(*cert, TrustRoots(Pki("root.pem"))).status(),
                StatusCode::kCorrupt, Failure::kBrokenChain, "does not lead to a trusted root");
}

TEST_CASE("sign: P-256, P-384 and P-521 bundles made here verify with their public key",
          "[sign][verify]") {
  for (const char* curve : {"p256", "p384", "p521"}) {
    INFO(curve);
    const std::string base = Pki(curve);
    auto who = SignAndVerify(base + ".key", "", "", TrustKey(base + ".pub"));
    INFO(who.status().ToString());
    REQUIRE(who.ok());
    CHECK(who->method == sign::Method::kKey);
    CHECK(who->key_hint == ReadPublicKey(base + ".pub").hint());
    CHECK(who->Describe() == "key " + who->key_hint);
  }
}

TEST_CASE("sign: a bundle signed through a two-level chain verifies against the root",
          "[sign][verify]") {
  auto who =
      SignAndVerify(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem"), TrustRoots(Pki("root.pem")));
  INFO(who.status().ToString());
  REQUIRE(who.ok());
  CHECK(who->method == sign::Method::kCertificate);
  CHECK(who->subject == "CN=release");
  auto p384 = SignAndVerify(Pki("leaf384.key"), Pki("leaf384.pem"), Pki("int.pem"),
                            TrustRoots(Pki("root.pem")));
  INFO(p384.status().ToString());
  CHECK(p384.ok());
  // Without the intermediate the chain is broken.
  ExpectFailure(
      SignAndVerify(Pki("leaf.key"), Pki("leaf.pem"), "", TrustRoots(Pki("root.pem"))).status(),
      StatusCode::kCorrupt, Failure::kBrokenChain, "does not lead to a trusted root");
}

TEST_CASE("sign: an identity is matched on the leaf's names", "[sign][verify]") {
  sign::TrustedSigners t = TrustRoots(Pki("root.pem"));
  for (const char* id : {"release@example.com", "CN=release", "release"}) {
    INFO(id);
    t.identities = {"nobody@example.com", id};
    CHECK(SignAndVerify(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem"), t).ok());
  }
  t.identities = {"nobody@example.com"};
  ExpectFailure(SignAndVerify(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem"), t).status(),
                StatusCode::kCorrupt, Failure::kIdentityMismatch, "\"release@example.com\"");
}

TEST_CASE("sign: an expired certificate, and one checked after it expires, are refused",
          "[sign][verify]") {
  ExpectFailure(SignAndVerify(Pki("expired.key"), Pki("expired.pem"), Pki("int.pem"),
                              TrustRoots(Pki("root.pem")))
                    .status(),
                StatusCode::kCorrupt, Failure::kExpiredCertificate,
                "the leaf certificate is not valid now: certificate has expired");
  sign::TrustedSigners later = TrustRoots(Pki("root.pem"));
  later.at_time = std::int64_t{4102444800};  // 2100
  ExpectFailure(SignAndVerify(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem"), later).status(),
                StatusCode::kCorrupt, Failure::kExpiredCertificate, "has expired");
}

TEST_CASE("sign: a wrong key, and trust of the other method, name the signer", "[sign][verify]") {
  ExpectFailure(SignAndVerify(Pki("p256.key"), "", "", TrustKey(Pki("p384.pub"))).status(),
                StatusCode::kCorrupt, Failure::kUntrustedKey,
                "signed by key \"" + ReadPublicKey(Pki("p256.pub")).hint() +
                    "\", which is not a trusted key (trusted: " +
                    ReadPublicKey(Pki("p384.pub")).hint() + ")");
  ExpectFailure(SignAndVerify(Pki("p256.key"), "", "", TrustRoots(Pki("root.pem"))).status(),
                StatusCode::kCorrupt, Failure::kUntrustedKey, "only CA roots are trusted");
  ExpectFailure(
      SignAndVerify(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem"), TrustKey(Pki("leaf.pub")))
          .status(),
      StatusCode::kCorrupt, Failure::kUntrustedKey, "only public keys are trusted");
  const Status none = SignAndVerify(Pki("p256.key"), "", "", sign::TrustedSigners{}).status();
  CHECK(none.code() == StatusCode::kInvalidArgument);
}

TEST_CASE("sign: a certificate whose key is not the private key's is refused when signing",
          "[sign][verify]") {
  auto id = sign::LoadSigningIdentity(Pki("p256.key"), Pki("leaf.pem"), "", {});
  REQUIRE_FALSE(id.ok());
  CHECK(id.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(id.status().message(), Catch::Contains("the certificate's key is not the key of"));
  auto chain_only = sign::LoadSigningIdentity(Pki("p256.key"), "", Pki("int.pem"), {});
  CHECK(chain_only.status().code() == StatusCode::kInvalidArgument);
}
