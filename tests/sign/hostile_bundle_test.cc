// Hostile bundles: each is refused with the error code and failure it
// deserves and a message naming the field, never a crash (the same bytes
// reach the bundle fuzz target through tests/hostile/known_bad/bundle/).
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "carton/sign/bundle.h"
#include "carton/sign/failure.h"
#include "carton/sign/signer.h"
#include "carton/sign/verify.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;
using Json = nlohmann::json;
using sign::Failure;

namespace {

std::string Base64(std::string_view s) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(s[i]) << 16) |
                       (static_cast<unsigned char>(s[i + 1]) << 8) |
                       static_cast<unsigned char>(s[i + 2]);
    for (int k6 = 18; k6 >= 0; k6 -= 6) out += k[(v >> k6) & 63];
  }
  if (i < s.size()) {
    unsigned v = static_cast<unsigned char>(s[i]) << 16;
    if (i + 1 < s.size()) v |= static_cast<unsigned char>(s[i + 1]) << 8;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < s.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A valid key bundle, as JSON to damage.
Json Valid() { return Json::parse(SignedBundleJson(Pki("p256.key"))); }

// The valid bundle with its payload's statement changed by `edit`.
std::string WithStatement(const std::function<void(Json&)>& edit) {
  Json b = Valid();
  Json s = Json::parse(sign::StatementJson(SmallStatement()));
  edit(s);
  b["dsseEnvelope"]["payload"] = Base64(s.dump());
  return b.dump();
}

std::string WithBundle(const std::function<void(Json&)>& edit) {
  Json b = Valid();
  edit(b);
  return b.dump();
}

struct Case {
  const char* what;
  std::string bytes;
  StatusCode code;
  Failure failure;
  const char* part;
};

std::vector<Case> Cases() {
  const StatusCode kC = StatusCode::kCorrupt;
  const StatusCode kU = StatusCode::kUnsupported;
  const Failure kBad = Failure::kBadBundle;
  const Failure kNo = Failure::kUnsupported;
  return {
      {"empty", "", kC, kBad, "bundle: not JSON"},
      {"huge", std::string(sign::kMaxBundleBytes + 1, ' '), kC, kBad, "more than the limit of"},
      {"deeply nested", std::string(100000, '[') + std::string(100000, ']'), kC, kBad,
       "nested deeper than 16 levels"},
      {"deeply nested, unclosed", std::string(100000, '['), kC, kBad, "bundle: not JSON"},
      {"nested in a field", WithBundle([](Json& b) {
         Json deep = Json::array();
         for (int i = 0; i < 40; ++i) deep = Json::array({deep});
         b["verificationMaterial"]["publicKey"]["hint"] = deep;
       }),
       kC, kBad, "nested deeper"},
      {"not an object", "[1, 2]", kC, kBad, "bundle: must be an object"},
      {"duplicate key", R"({"mediaType":"a","mediaType":"b"})", kC, kBad,
       "duplicate key \"mediaType\""},
      {"not UTF-8", std::string("{\"mediaType\":\"\xff\"}"), kC, kBad, "not JSON"},
      {"unknown field", WithBundle([](Json& b) { b["extra"] = 1; }), kC, kBad,
       "\"extra\": unknown field"},
      {"mediaType a number", WithBundle([](Json& b) { b["mediaType"] = 5; }), kC, kBad,
       "mediaType: must be a string"},
      {"mediaType v0.2", WithBundle([](Json& b) {
         b["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2";
       }),
       kU, kNo, "mediaType: "},
      {"mediaType other", WithBundle([](Json& b) { b["mediaType"] = "text/plain"; }), kC, kBad,
       "mediaType: \"text/plain\" is not"},
      {"no verificationMaterial", WithBundle([](Json& b) { b.erase("verificationMaterial"); }), kC,
       kBad, "verificationMaterial: missing"},
      {"verificationMaterial an array",
       WithBundle([](Json& b) { b["verificationMaterial"] = Json::array(); }), kC, kBad,
       "verificationMaterial: must be an object"},
      {"no key nor chain",
       WithBundle([](Json& b) { b["verificationMaterial"].erase("publicKey"); }), kC, kBad,
       "has neither publicKey nor x509CertificateChain"},
      {"keyless", WithBundle([](Json& b) {
         b["verificationMaterial"] = {{"certificate", {{"rawBytes", "AAAA"}}},
                                      {"tlogEntries", Json::array()}};
       }),
       kU, kNo,
       "verificationMaterial.certificate: keyless (sigstore) bundles are not supported yet"},
      {"tlog entries", WithBundle([](Json& b) {
         b["verificationMaterial"]["tlogEntries"] = Json::array({Json::object()});
       }),
       kU, kNo, "verificationMaterial.tlogEntries: transparency log entries are not supported yet"},
      {"hint a number",
       WithBundle([](Json& b) { b["verificationMaterial"]["publicKey"]["hint"] = 3; }), kC, kBad,
       "verificationMaterial.publicKey.hint: must be a string"},
      {"empty chain", WithBundle([](Json& b) {
         b["verificationMaterial"] = {{"x509CertificateChain", {{"certificates", Json::array()}}}};
       }),
       kC, kBad, "verificationMaterial.x509CertificateChain.certificates: is empty"},
      {"chain of 9", WithBundle([](Json& b) {
         b["verificationMaterial"] = {{"x509CertificateChain", {{"certificates", Json::array()}}}};
         for (int i = 0; i < 9; ++i)
           b["verificationMaterial"]["x509CertificateChain"]["certificates"].push_back(
               {{"rawBytes", "AAAA"}});
       }),
       kC, kBad, "9 certificates, more than the limit of 8"},
      {"rawBytes not base64", WithBundle([](Json& b) {
         b["verificationMaterial"] = {
             {"x509CertificateChain", {{"certificates", {{{"rawBytes", "%%%"}}}}}}};
       }),
       kC, kBad, "certificates[0].rawBytes: not base64"},
      {"no dsseEnvelope", WithBundle([](Json& b) { b.erase("dsseEnvelope"); }), kC, kBad,
       "dsseEnvelope: missing"},
      {"message signature", WithBundle([](Json& b) {
         b.erase("dsseEnvelope");
         b["messageSignature"] = Json::object();
       }),
       kU, kNo, "messageSignature"},
      {"payloadType other",
       WithBundle([](Json& b) { b["dsseEnvelope"]["payloadType"] = "text/plain"; }), kC, kBad,
       "dsseEnvelope.payloadType: \"text/plain\" is not"},
      {"payload null", WithBundle([](Json& b) { b["dsseEnvelope"]["payload"] = nullptr; }), kC,
       kBad, "dsseEnvelope.payload: must be a string"},
      {"payload not base64",
       WithBundle([](Json& b) { b["dsseEnvelope"]["payload"] = "not base64!"; }), kC, kBad,
       "dsseEnvelope.payload: not base64"},
      {"payload base64 with a space",
       WithBundle([](Json& b) { b["dsseEnvelope"]["payload"] = "e30 ="; }), kC, kBad,
       "dsseEnvelope.payload: not base64"},
      {"payload not JSON",
       WithBundle([](Json& b) { b["dsseEnvelope"]["payload"] = Base64("not json"); }), kC, kBad,
       "payload: not JSON"},
      {"signatures an object",
       WithBundle([](Json& b) { b["dsseEnvelope"]["signatures"] = Json::object(); }), kC, kBad,
       "dsseEnvelope.signatures: must be an array"},
      {"no signature", WithBundle([](Json& b) { b["dsseEnvelope"]["signatures"] = Json::array(); }),
       kC, kBad, "dsseEnvelope.signatures: is empty"},
      {"two signatures", WithBundle([](Json& b) {
         auto& s = b["dsseEnvelope"]["signatures"];
         s.push_back(s[0]);
       }),
       kU, kNo, "2 signatures; only one is supported yet"},
      {"sig a number", WithBundle([](Json& b) { b["dsseEnvelope"]["signatures"][0]["sig"] = 7; }),
       kC, kBad, "dsseEnvelope.signatures[0].sig: must be a string"},
      {"keyid a number",
       WithBundle([](Json& b) { b["dsseEnvelope"]["signatures"][0]["keyid"] = 7; }), kC, kBad,
       "signatures[0].keyid: must be a string or null"},
      {"wrong _type", WithStatement([](Json& s) { s["_type"] = "x"; }), kC, kBad,
       "payload._type: \"x\" is not"},
      {"wrong predicate",
       WithStatement([](Json& s) { s["predicateType"] = "https://example.com/p"; }), kC, kBad,
       "payload.predicateType: \"https://example.com/p\" is not"},
      {"later OMS",
       WithStatement([](Json& s) { s["predicateType"] = "https://model_signing/signature/v2.0"; }),
       kU, kNo, "another OMS version"},
      {"two subjects", WithStatement([](Json& s) { s["subject"].push_back(s["subject"][0]); }), kC,
       kBad, "payload.subject: 2 subjects, not exactly one"},
      {"subject digest not hex",
       WithStatement([](Json& s) { s["subject"][0]["digest"]["sha256"] = "XYZ"; }), kC, kBad,
       "payload.subject[0].digest.sha256: \"XYZ\" is not a sha256"},
      {"root digest wrong",
       WithStatement([](Json& s) { s["subject"][0]["digest"]["sha256"] = std::string(64, 'a'); }),
       kC, kBad, "but the resources' root digest is"},
      {"predicate extra field", WithStatement([](Json& s) { s["predicate"]["x"] = 1; }), kC, kBad,
       "payload.predicate.\"x\": unknown field"},
      {"shards",
       WithStatement([](Json& s) { s["predicate"]["serialization"]["method"] = "shards"; }), kU,
       kNo, "payload.predicate.serialization.method: \"shards\" is not supported yet"},
      {"blake3",
       WithStatement([](Json& s) { s["predicate"]["serialization"]["hash_type"] = "blake3"; }), kU,
       kNo, "hash_type: \"blake3\" is not supported yet"},
      {"allow_symlinks a string",
       WithStatement([](Json& s) { s["predicate"]["serialization"]["allow_symlinks"] = "no"; }), kC,
       kBad, "allow_symlinks: must be a boolean"},
      {"resources an object",
       WithStatement([](Json& s) { s["predicate"]["resources"] = Json::object(); }), kC, kBad,
       "payload.predicate.resources: must be an array"},
      {"resource name ..", WithStatement([](Json& s) {
         s["predicate"]["resources"][0]["name"] = "model/../../etc/passwd";
       }),
       kC, kBad,
       "payload.predicate.resources[0].name: \"model/../../etc/passwd\" has a \"..\" component"},
      {"resource name absolute",
       WithStatement([](Json& s) { s["predicate"]["resources"][1]["name"] = "/etc/passwd"; }), kC,
       kBad, "resources[1].name: \"/etc/passwd\" is an absolute path"},
      {"resource name empty component",
       WithStatement([](Json& s) { s["predicate"]["resources"][0]["name"] = "a//b"; }), kC, kBad,
       "has an empty component"},
      {"resource listed twice", WithStatement([](Json& s) {
         s["predicate"]["resources"][1]["name"] = s["predicate"]["resources"][0]["name"];
       }),
       kC, kBad, "is listed twice"},
      {"resource digest a number",
       WithStatement([](Json& s) { s["predicate"]["resources"][0]["digest"] = 12; }), kC, kBad,
       "resources[0].digest: must be a string"},
      {"resource algorithm md5",
       WithStatement([](Json& s) { s["predicate"]["resources"][0]["algorithm"] = "md5"; }), kC,
       kBad, "resources[0].algorithm: \"md5\" is not a hash algorithm"},
      {"ignore path ..",
       WithStatement([](Json& s) { s["predicate"]["serialization"]["ignore_paths"] = {".."}; }), kC,
       kBad, "ignore_paths[0]: \"..\" has a \"..\" component"},
  };
}

}  // namespace

TEST_CASE("sign: hostile bundles are refused naming the field, never a crash",
          "[sign][bundle][hostile]") {
  for (const Case& c : Cases()) {
    INFO(c.what);
    auto b = sign::ParseBundle(AsBytes(c.bytes));
    REQUIRE_FALSE(b.ok());
    ExpectFailure(b.status(), c.code, c.failure, c.part);
  }
}

TEST_CASE("sign: a valid bundle passes the table's checks (the table damages it)",
          "[sign][bundle][hostile]") {
  CHECK(sign::ParseBundle(AsBytes(Valid().dump())).ok());
  CHECK(sign::ParseBundle(AsBytes(WithStatement([](Json&) {}))).ok());
}

TEST_CASE("sign: a signature over other bytes does not verify", "[sign][verify][hostile]") {
  // The statement changed after signing: its signature is the old one's.
  auto changed = sign::ParseBundle(AsBytes(WithStatement(
      [](Json& s) { s["predicate"]["serialization"]["ignore_paths"].push_back("weights.bin"); })));
  REQUIRE(changed.ok());
  ExpectFailure(sign::VerifyBundle(*changed, TrustKey(Pki("p256.pub"))).status(),
                StatusCode::kCorrupt, Failure::kBadSignature,
                "the signature does not verify with trusted key");
}

TEST_CASE("sign: a chain that loops is a broken chain", "[sign][verify][hostile]") {
  auto b = sign::ParseBundle(
      AsBytes(SignedBundleJson(Pki("loop-leaf.key"), Pki("loop-leaf.pem"), Pki("loop-x.pem"))));
  REQUIRE(b.ok());
  // Both CAs of the loop, in the bundle.
  b->certificates.push_back(ReadCertificates(Pki("loop-y.pem"))[0].der());
  ExpectFailure(sign::VerifyBundle(*b, TrustRoots(Pki("root.pem"))).status(), StatusCode::kCorrupt,
                Failure::kBrokenChain, "does not lead to a trusted root");
}

TEST_CASE("sign: a certificate for another use is refused", "[sign][verify][hostile]") {
  auto b = sign::ParseBundle(
      AsBytes(SignedBundleJson(Pki("server.key"), Pki("server.pem"), Pki("int.pem"))));
  REQUIRE(b.ok());
  ExpectFailure(sign::VerifyBundle(*b, TrustRoots(Pki("root.pem"))).status(), StatusCode::kCorrupt,
                Failure::kWrongUsage, "is not for code signing");
}
