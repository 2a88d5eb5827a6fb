// A carton's signature in an OCI registry (oci/FORMAT.md "Signatures"):
// the OMS bundle (carton/signature.h) pushed as an OCI referrer of the
// carton's manifest, as cosign v3 stores Sigstore bundles: an image
// manifest whose artifactType and one layer are
// application/vnd.dev.sigstore.bundle.v0.3+json, whose config is the empty
// descriptor, whose `subject` is the carton's manifest, annotated
// dev.sigstore.bundle.predicateType https://model_signing/signature/v1.0.
// Found through the referrers API, or the tag schema ("sha256-<hex>", an
// image index) on registries without it, such as distribution 2.8.
//
// Both forms of a carton artifact (OciFormat) are signed the same way.
// Registry answers are untrusted: every referrer is checked before its
// bundle is read. Thread-safety: as artifact.h.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "carton/carton/location.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/oci/artifact.h"
#include "carton/sign/bundle.h"

namespace carton::oci {

inline constexpr std::string_view kSigstoreBundleMediaType =
    "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr std::string_view kOciEmptyMediaType = "application/vnd.oci.empty.v1+json";
inline constexpr std::string_view kOciIndexMediaType = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kBundlePredicateAnnotation = "dev.sigstore.bundle.predicateType";
inline constexpr std::string_view kBundleContentAnnotation = "dev.sigstore.bundle.content";
inline constexpr std::string_view kCreatedAnnotation = "org.opencontainers.image.created";
// Referrers read at most, and referrers' bundles tried at most, per pull.
inline constexpr std::size_t kMaxReferrers = 1024;
inline constexpr std::size_t kMaxSignatureTries = 8;

// The tag of the tag schema for `subject`: "sha256-<hex>".
std::string ReferrersTag(const manifest::Digest& subject);

struct OciSignaturePush {
  manifest::Digest referrer_digest{};  // the referrer's image manifest
  std::uint64_t bundle_size = 0;
  // The registry indexes referrers itself; false: the tag schema's index
  // was written (ReferrersTag).
  bool referrers_api = false;
};

// Pushes `bundle` (an OMS bundle's bytes) as a referrer of manifest
// `subject` in `reference`'s repository: the bundle and the empty config
// as blobs, the referrer's manifest by digest, then, for a registry
// without the referrers API, the tag schema's index (read, the referrer
// added unless it is there, written back). Errors: kInvalidArgument (a bad
// reference), kNotFound (no manifest `subject` in the repository),
// kNetworkError, and those of oci::Client.
Result<OciSignaturePush> PushCartonSignature(const Location& reference,
                                             const manifest::Digest& subject, ByteView bundle,
                                             const Environment& environment,
                                             const OciOptions& options = {});

struct OciSignaturePull {
  manifest::Digest referrer_digest{};
  std::string bundle;  // its bytes, as pushed
  bool referrers_api = false;
};

// The newest signature of manifest `subject` (by its created annotation)
// whose bundle parses and lists exactly `files` (the carton's MANIFEST
// entries, carton::SignedFiles); nullopt when there is none. Referrers
// that are not OMS bundles are passed over; one that claims to be but
// breaks the layout, or whose bundle is bad or lists other files, is
// passed over with a Notice (another may be good; the caller's trust
// check decides). Errors: kNetworkError, kCorrupt (an index that is not
// JSON, a blob whose sha256 is wrong), and those of oci::Client.
Result<std::optional<OciSignaturePull>> PullCartonSignature(const Location& reference,
                                                            const manifest::Digest& subject,
                                                            std::span<const sign::Resource> files,
                                                            const Environment& environment,
                                                            const OciOptions& options = {});

// After PullCarton wrote `carton_path` from `reference` (whose manifest
// is `subject`): its signature (PullCartonSignature, for the files of the
// carton's MANIFEST) written beside it (<carton_path>.sig),
// atomically; returns that path, or "" when the registry has none. A
// signature left there from before is removed first (it belonged to the
// carton replaced). A lookup that fails is a Notice, not an error: the
// carton was pulled, unsigned as far as this pull knows. PullCarton does
// the same with its own connection when OciOptions::fetch_signature is
// set. Errors: those of reading the carton's MANIFEST, kIoError.
Result<std::string> PullSignatureBeside(const Location& reference, const manifest::Digest& subject,
                                        const std::string& carton_path,
                                        const Environment& environment,
                                        const OciOptions& options = {});

}  // namespace carton::oci
