// The OMS bundle: its encoding rules (PAE, root digest), the writer and the
// strict parser's accept cases, including what older bundles hold.
#include "carton/sign/bundle.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "carton/sign/failure.h"
#include "carton/sign/files.h"
#include "carton/sign/signer.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;
using Json = nlohmann::json;

TEST_CASE("sign: the PAE is DSSE's, lengths in decimal bytes", "[sign][bundle]") {
  CHECK(sign::Pae("t", "") == "DSSEv1 1 t 0 ");
  CHECK(sign::Pae("application/vnd.in-toto+json", "{\"a\":1}") ==
        "DSSEv1 28 application/vnd.in-toto+json 7 {\"a\":1}");
  // Bytes, not characters: "é" is two.
  CHECK(sign::Pae("x", "\xc3\xa9") == "DSSEv1 1 x 2 \xc3\xa9");
}

TEST_CASE("sign: the root digest is over the raw digests in the order given", "[sign][bundle]") {
  const auto a = manifest::Sha256Of(AsBytes("a"));
  const auto b = manifest::Sha256Of(AsBytes("b"));
  std::string raw(a.begin(), a.end());
  raw.append(b.begin(), b.end());
  const std::vector<sign::Resource> ab = {{"a", a}, {"b", b}};
  const std::vector<sign::Resource> ba = {{"b", b}, {"a", a}};
  CHECK(sign::RootDigest(ab) == manifest::Sha256Of(AsBytes(raw)));
  CHECK(sign::RootDigest(ab) != sign::RootDigest(ba));
  CHECK(manifest::ToHex(sign::RootDigest({})) == manifest::ToHex(manifest::Sha256Of({})));
}

TEST_CASE("sign: the key vector's root digest is what its resources give", "[sign][bundle]") {
  auto b =
      sign::ParseBundle(AsBytes(FileBytes(OmsPath("test-vectors/v1.0/valid/key.bundle.json"))));
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  CHECK(b->method == sign::Method::kKey);
  CHECK(b->key_hint == "e8450dec4eb99dae995da9af1bc2cc9f76ed669ee2e744f57abba763df3e3f8e");
  CHECK(manifest::ToHex(b->statement.root_digest) ==
        "92745110b1ab4368471cbe31664e10174e954b113a3df333db860317b2c6dec4");
  REQUIRE(b->statement.resources.size() == 2);
  CHECK(b->statement.resources[0].name == "signme-1");
  CHECK(b->statement.subject_name == "model");
  CHECK(b->statement.ignore_paths.size() == 5);
}

TEST_CASE("sign: a bundle made here parses back to what was signed", "[sign][bundle]") {
  for (const char* key : {"p256.key", "p384.key", "p521.key"}) {
    INFO(key);
    const std::string json = SignedBundleJson(Pki(key));
    auto b = sign::ParseBundle(AsBytes(json));
    INFO(b.status().ToString());
    REQUIRE(b.ok());
    CHECK(b->method == sign::Method::kKey);
    CHECK(b->key_hint == ReadPublicKey(Pki(std::string(key).substr(0, 4) + ".pub")).hint());
    CHECK(b->statement.resources == SmallStatement().resources);
    CHECK(b->statement.ignore_paths == SmallStatement().ignore_paths);
    CHECK(b->statement.root_digest == SmallStatement().root_digest);
    CHECK(sign::BundleJson(*b) == json);
  }
  const std::string json = SignedBundleJson(Pki("leaf.key"), Pki("leaf.pem"), Pki("int.pem"));
  auto b = sign::ParseBundle(AsBytes(json));
  REQUIRE(b.ok());
  CHECK(b->method == sign::Method::kCertificate);
  CHECK(b->certificates.size() == 2);
  CHECK(b->certificates[0] == ReadCertificates(Pki("leaf.pem"))[0].der());
}

TEST_CASE("sign: keyid absent, empty or null, and rawBytes instead of hint, are accepted",
          "[sign][bundle]") {
  Json j = Json::parse(SignedBundleJson(Pki("p256.key")));
  auto& sig = j["dsseEnvelope"]["signatures"][0];
  for (Json id : {Json(nullptr), Json(""), Json("k1")}) {
    sig["keyid"] = id;
    CHECK(sign::ParseBundle(AsBytes(j.dump())).ok());
  }
  sig.erase("keyid");
  CHECK(sign::ParseBundle(AsBytes(j.dump())).ok());
  // An older bundle: the key itself as base64 DER.
  const auto der = ReadPublicKey(Pki("p256.pub")).der();
  std::string der_b64 = FileBytes(Pki("p256.pub"));
  der_b64 = der_b64.substr(der_b64.find('\n') + 1);
  der_b64 = der_b64.substr(0, der_b64.find("-----"));
  der_b64.erase(std::remove(der_b64.begin(), der_b64.end(), '\n'), der_b64.end());
  j["verificationMaterial"]["publicKey"] = {{"rawBytes", der_b64}};
  auto b = sign::ParseBundle(AsBytes(j.dump()));
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  CHECK(b->key_hint.empty());
  CHECK(b->raw_public_key == der);
}

TEST_CASE("sign: resources in any order parse; statements made here sort by component",
          "[sign][bundle]") {
  std::vector<sign::Resource> r = {{"a-b", {}}, {"a/b", {}}, {"B", {}}, {"a", {}}};
  auto unsorted = sign::MakeStatement("m", r, {});
  auto parsed = sign::ParseStatement(sign::StatementJson(unsorted));
  REQUIRE(parsed.ok());
  CHECK(parsed->resources == r);
  sign::SortByComponents(&r);
  std::vector<std::string> names;
  for (const auto& x : r) names.push_back(x.name);
  CHECK(names == std::vector<std::string>{"B", "a", "a/b", "a-b"});
}
