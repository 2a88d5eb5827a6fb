// Finding and fetching a carton's signature among its manifest's referrers
// (oci/FORMAT.md "Signatures").
#include <algorithm>
#include <filesystem>

#include "carton/carton/reader.h"
#include "carton/carton/signature.h"
#include "carton/common/atomic_file.h"
#include "carton/common/notice.h"
#include "carton/common/quote.h"
#include "carton/oci/signature.h"
#include "carton/sign/files.h"
#include "json.h"
#include "referrers.h"
#include "session.h"

namespace carton::oci {
namespace {

using internal::OciSession;
using Json = nlohmann::json;

struct Candidate {
  manifest::Digest digest{};
  std::string created;
};

std::string Text(const Json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The OMS bundles among an index's descriptors, newest first. A
// descriptor without annotations is kept (cosign's tag-schema index drops
// them); its manifest is checked when it is read.
std::vector<Candidate> Candidates(const Json& index) {
  std::vector<Candidate> out;
  const auto it = index.find("manifests");
  if (it == index.end() || !it->is_array()) return out;
  for (const Json& d : *it) {
    if (out.size() >= kMaxReferrers) break;
    if (!d.is_object() || Text(d, "artifactType") != kSigstoreBundleMediaType) continue;
    const auto notes = d.find("annotations");
    const bool annotated = notes != d.end() && notes->is_object();
    if (annotated && notes->contains(kBundlePredicateAnnotation) &&
        Text(*notes, kBundlePredicateAnnotation) != sign::kPredicateType) {
      continue;
    }
    auto digest = manifest::ParseDigestString(Text(d, "digest"));
    if (!digest.ok()) continue;
    out.push_back({*digest, annotated ? Text(*notes, kCreatedAnnotation) : ""});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.created > b.created; });
  return out;
}

// The referrers index: the API's, else the tag schema's (none: empty).
Result<Json> ReferrersIndex(const OciSession& s, const manifest::Digest& subject, bool* api) {
  CARTON_ASSIGN_OR_RETURN(auto listed, s.client->GetReferrers(s.ref.repository, subject));
  *api = listed.has_value();
  if (listed) return internal::ParseReferrerJson(listed->bytes, s.where + ": referrers");
  const std::string tag = ReferrersTag(subject);
  auto tagged = s.client->GetManifest(s.ref.repository, tag);
  if (!tagged.ok()) {
    if (tagged.status().code() == StatusCode::kNotFound) return Json::object();
    return tagged.status();
  }
  return internal::ParseReferrerJson(tagged->bytes, s.where + ": tag " + tag);
}

// The bundle layer of referrer `c`, checked against the layout. Errors
// are reasons to pass it over.
Result<std::string> ReadReferrer(const OciSession& s, const Candidate& c,
                                 const manifest::Digest& subject) {
  const std::string what = s.where + ": referrer " + manifest::DigestString(c.digest);
  CARTON_ASSIGN_OR_RETURN(
      Manifest m, s.client->GetManifest(s.ref.repository, manifest::DigestString(c.digest)));
  CARTON_ASSIGN_OR_RETURN(Json j, internal::ParseReferrerJson(m.bytes, what));
  if (!j.is_object() || Text(j, "artifactType") != kSigstoreBundleMediaType) {
    return Unsupported(what + ": not a Sigstore bundle");
  }
  const auto layers = j.find("layers");
  const auto to = j.find("subject");
  if (to == j.end() || !to->is_object() || Text(*to, "digest") != manifest::DigestString(subject)) {
    return Corrupt(what + ": its subject is not this carton's manifest");
  }
  if (layers == j.end() || !layers->is_array() || layers->size() != 1 ||
      !(*layers)[0].is_object() || Text((*layers)[0], "mediaType") != kSigstoreBundleMediaType) {
    return Corrupt(what + ": not one layer of " + std::string(kSigstoreBundleMediaType));
  }
  const Json& layer = (*layers)[0];
  CARTON_ASSIGN_OR_RETURN(manifest::Digest digest,
                          manifest::ParseDigestString(Text(layer, "digest")));
  const auto size = layer.find("size");
  if (size == layer.end() || !size->is_number_unsigned() ||
      size->get<std::uint64_t>() > sign::kMaxBundleBytes) {
    return Corrupt(what + ": a bundle layer without a size, or larger than " +
                   std::to_string(sign::kMaxBundleBytes) + " bytes");
  }
  CARTON_ASSIGN_OR_RETURN(std::string path, s.client->FetchBlob(s.cache, s.ref.repository, digest,
                                                                size->get<std::uint64_t>()));
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  return std::string(AsChars(bytes));
}

}  // namespace

Result<std::optional<OciSignaturePull>> internal::FindSignature(
    const OciSession& s, const manifest::Digest& subject, std::span<const sign::Resource> files) {
  OciSignaturePull out;
  CARTON_ASSIGN_OR_RETURN(Json index, ReferrersIndex(s, subject, &out.referrers_api));
  const std::vector<Candidate> candidates = Candidates(index);
  for (std::size_t i = 0; i < candidates.size() && i < kMaxSignatureTries; ++i) {
    auto bytes = ReadReferrer(s, candidates[i], subject);
    if (!bytes.ok()) {
      if (bytes.status().code() == StatusCode::kNetworkError) return bytes.status();
      if (bytes.status().code() != StatusCode::kUnsupported) Notice(bytes.status().message());
      continue;
    }
    const std::string what =
        s.where + ": signature " + manifest::DigestString(candidates[i].digest);
    auto bundle = sign::ParseBundle(AsBytes(*bytes));
    if (!bundle.ok()) {
      Notice(what + ": passed over: " + bundle.status().message());
      continue;
    }
    const auto problems = sign::CompareFiles(bundle->statement.resources, files);
    if (!problems.empty()) {
      Notice(what + ": passed over: it does not list this carton's files: " +
             sign::ProblemsStatus(problems).message());
      continue;
    }
    out.referrer_digest = candidates[i].digest;
    out.bundle = std::move(*bytes);
    return std::optional<OciSignaturePull>(std::move(out));
  }
  return std::optional<OciSignaturePull>();
}

Result<std::string> internal::PlaceSignature(const OciSession& s, const manifest::Digest& subject,
                                             const manifest::Manifest& manifest,
                                             const std::string& carton_path) {
  const std::string path = carton_path + std::string(kSignatureSuffix);
  // What lies there belongs to the carton just replaced.
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec)
    return IoError(path +
                   ": cannot remove the signature of the carton it replaced: " + ec.message());
  auto found = FindSignature(s, subject, SignedFiles(manifest));
  if (!found.ok()) {
    Notice(s.where + ": could not look for its signature: " + found.status().message());
    return std::string();
  }
  if (!*found) return std::string();
  CARTON_RETURN_IF_ERROR(WriteFileAtomically(path, AsBytes((*found)->bundle)));
  return path;
}

Result<std::optional<OciSignaturePull>> PullCartonSignature(const Location& reference,
                                                            const manifest::Digest& subject,
                                                            std::span<const sign::Resource> files,
                                                            const Environment& environment,
                                                            const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(OciSession s, internal::OpenOciSession(reference, environment, options));
  return internal::FindSignature(s, subject, files);
}

Result<std::string> PullSignatureBeside(const Location& reference, const manifest::Digest& subject,
                                        const std::string& carton_path,
                                        const Environment& environment, const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(auto manifest,
                          OpenFileCopy(carton_path, carton_path, environment)->Manifest());
  CARTON_ASSIGN_OR_RETURN(OciSession s, internal::OpenOciSession(reference, environment, options));
  return internal::PlaceSignature(s, subject, manifest->manifest, carton_path);
}

}  // namespace carton::oci
