// Writing OMS bundles and statements (sign/FORMAT.md "The bundle").
#include "carton/sign/bundle.h"

#include <nlohmann/json.hpp>

#include "base64.h"

namespace carton::sign {
namespace {

using Json = nlohmann::json;

std::string Dump(const Json& j, int indent) {
  // Names were checked to be UTF-8 when they were read; replace keeps a
  // writer from throwing whatever it is given.
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Json StatementValue(const Statement& s) {
  Json resources = Json::array();
  for (const Resource& r : s.resources) {
    resources.push_back(
        {{"name", r.name}, {"digest", manifest::ToHex(r.digest)}, {"algorithm", "sha256"}});
  }
  Json serialization = {{"method", "files"},
                        {"hash_type", "sha256"},
                        {"allow_symlinks", s.allow_symlinks},
                        {"ignore_paths", s.ignore_paths}};
  Json subject = {{"name", s.subject_name},
                  {"digest", {{"sha256", manifest::ToHex(s.root_digest)}}}};
  return {{"_type", kStatementType},
          {"subject", Json::array({subject})},
          {"predicateType", kPredicateType},
          {"predicate", {{"resources", resources}, {"serialization", serialization}}}};
}

Json VerificationMaterial(const Bundle& b) {
  Json m = {{"tlogEntries", Json::array()}};
  if (b.method == Method::kKey) {
    Json key = Json::object();
    if (!b.key_hint.empty()) key["hint"] = b.key_hint;
    if (!b.raw_public_key.empty()) key["rawBytes"] = internal::Base64Encode(b.raw_public_key);
    m["publicKey"] = key;
    return m;
  }
  Json certificates = Json::array();
  for (const auto& der : b.certificates) {
    certificates.push_back({{"rawBytes", internal::Base64Encode(der)}});
  }
  m["x509CertificateChain"] = {{"certificates", certificates}};
  return m;
}

}  // namespace

std::string_view MethodName(Method method) {
  return method == Method::kKey ? "key" : "certificate";
}

std::string Pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 " + std::to_string(payload_type.size()) + " ";
  out += payload_type;
  out += " " + std::to_string(payload.size()) + " ";
  out += payload;
  return out;
}

manifest::Digest RootDigest(std::span<const Resource> resources) {
  manifest::Sha256 h;
  for (const Resource& r : resources) {
    h.Update({reinterpret_cast<const std::byte*>(r.digest.data()), r.digest.size()});
  }
  return h.Finish();
}

Statement MakeStatement(std::string subject_name, std::vector<Resource> resources,
                        std::vector<std::string> ignore_paths, bool allow_symlinks) {
  Statement s;
  s.subject_name = std::move(subject_name);
  s.root_digest = RootDigest(resources);
  s.resources = std::move(resources);
  s.ignore_paths = std::move(ignore_paths);
  s.allow_symlinks = allow_symlinks;
  return s;
}

std::string StatementJson(const Statement& statement) { return Dump(StatementValue(statement), 2); }

std::string BundleJson(const Bundle& bundle) {
  Json signature = {{"sig", internal::Base64Encode(bundle.signature)}, {"keyid", ""}};
  Json envelope = {{"payload", internal::Base64Encode(AsBytes(bundle.payload))},
                   {"payloadType", kPayloadType},
                   {"signatures", Json::array({signature})}};
  Json j = {{"mediaType", kBundleMediaType},
            {"verificationMaterial", VerificationMaterial(bundle)},
            {"dsseEnvelope", envelope}};
  return Dump(j, 2) + "\n";
}

}  // namespace carton::sign
