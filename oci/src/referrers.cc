// Signatures as OCI referrers (oci/FORMAT.md "Signatures"): cosign v3's
// layout for Sigstore bundles, found through the referrers API or the tag
// schema.
#include "referrers.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "carton/common/atomic_file.h"
#include "carton/common/notice.h"
#include "carton/common/quote.h"
#include "carton/oci/signature.h"
#include "carton/sign/files.h"
#include "json.h"
#include "session.h"

namespace carton::oci {
namespace {

using internal::OciSession;
using Json = nlohmann::json;

constexpr std::string_view kEmptyConfig = "{}";

Json Descriptor(std::string_view media_type, const manifest::Digest& digest, std::uint64_t size) {
  return {{"mediaType", media_type}, {"digest", manifest::DigestString(digest)}, {"size", size}};
}

std::string Now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Json Annotations(const std::string& created) {
  return {{std::string(kBundleContentAnnotation), "dsse-envelope"},
          {std::string(kBundlePredicateAnnotation), std::string(sign::kPredicateType)},
          {std::string(kCreatedAnnotation), created}};
}

// The tag schema's index for a registry without the referrers API: the
// referrer added to what the tag holds, unless it is there.
Status AddToTagIndex(const OciSession& s, const manifest::Digest& subject, const Json& entry) {
  const std::string tag = ReferrersTag(subject);
  Json index = {
      {"schemaVersion", 2}, {"mediaType", kOciIndexMediaType}, {"manifests", Json::array()}};
  auto current = s.client->GetManifest(s.ref.repository, tag);
  if (current.ok()) {
    CARTON_ASSIGN_OR_RETURN(index,
                            internal::ParseReferrerJson(current->bytes, s.where + ": tag " + tag));
    if (!index.is_object() || !index["manifests"].is_array()) {
      return Corrupt(s.where + ": tag " + tag + ": not an image index");
    }
  } else if (current.status().code() != StatusCode::kNotFound) {
    return current.status();
  }
  for (const Json& m : index["manifests"]) {
    if (m.is_object() && m.value("digest", "") == entry["digest"]) return Status::Ok();
  }
  index["manifests"].push_back(entry);
  const std::string bytes = index.dump();
  return s.client->PutManifest(s.ref.repository, tag, kOciIndexMediaType, AsBytes(bytes)).status();
}

}  // namespace

Result<nlohmann::json> internal::ParseReferrerJson(std::string_view text, const std::string& what) {
  JsonErrorWording w;
  w.invalid_code = StatusCode::kCorrupt;
  w.invalid_prefix = what + ": not JSON: ";
  w.too_deep_code = StatusCode::kCorrupt;
  w.too_deep_message = what + ": nested too deep";
  return ParseBoundedJson(text, 8, w);
}

std::string ReferrersTag(const manifest::Digest& subject) {
  return "sha256-" + manifest::ToHex(subject);
}

Result<OciSignaturePush> PushCartonSignature(const Location& reference,
                                             const manifest::Digest& subject, ByteView bundle,
                                             const Environment& environment,
                                             const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(OciSession s, internal::OpenOciSession(reference, environment, options));
  const std::string& repo = s.ref.repository;
  CARTON_ASSIGN_OR_RETURN(Manifest target,
                          s.client->GetManifest(repo, manifest::DigestString(subject)));
  const std::string subject_type =
      target.media_type.empty() ? std::string(kImageManifestMediaType) : target.media_type;
  const manifest::Digest config = manifest::Sha256Of(AsBytes(kEmptyConfig));
  const manifest::Digest layer = manifest::Sha256Of(bundle);
  CARTON_RETURN_IF_ERROR(s.client->PushBlob(repo, config, AsBytes(kEmptyConfig)).status());
  CARTON_RETURN_IF_ERROR(s.client->PushBlob(repo, layer, bundle).status());
  const std::string created = Now();
  const Json referrer = {
      {"schemaVersion", 2},
      {"mediaType", kImageManifestMediaType},
      {"artifactType", kSigstoreBundleMediaType},
      {"config", Descriptor(kOciEmptyMediaType, config, kEmptyConfig.size())},
      {"layers", Json::array({Descriptor(kSigstoreBundleMediaType, layer, bundle.size())})},
      {"subject", Descriptor(subject_type, subject, target.bytes.size())},
      {"annotations", Annotations(created)}};
  const std::string bytes = referrer.dump();
  OciSignaturePush out;
  out.referrer_digest = manifest::Sha256Of(AsBytes(bytes));
  out.bundle_size = bundle.size();
  CARTON_RETURN_IF_ERROR(s.client
                             ->PutManifest(repo, manifest::DigestString(out.referrer_digest),
                                           kImageManifestMediaType, AsBytes(bytes))
                             .status());
  CARTON_ASSIGN_OR_RETURN(auto api, s.client->GetReferrers(repo, subject));
  out.referrers_api = api.has_value();
  if (!out.referrers_api) {
    Json entry = Descriptor(kImageManifestMediaType, out.referrer_digest, bytes.size());
    entry["artifactType"] = kSigstoreBundleMediaType;
    entry["annotations"] = Annotations(created);
    CARTON_RETURN_IF_ERROR(AddToTagIndex(s, subject, entry));
  }
  return out;
}

}  // namespace carton::oci
