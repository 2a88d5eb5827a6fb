// Private to oci/src: what pushing and pulling signatures share
// (referrers.cc, referrers_pull.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/manifest/manifest.h"
#include "carton/oci/signature.h"
#include "session.h"

namespace carton::oci::internal {

// Parses a referrer's manifest or a referrers index (untrusted): kCorrupt
// "<what>: not JSON: ..." or "<what>: nested too deep" (they nest 4
// levels: an index, its manifests, a descriptor, its annotations).
Result<nlohmann::json> ParseReferrerJson(std::string_view text, const std::string& what);

// PullCartonSignature through an open session.
Result<std::optional<OciSignaturePull>> FindSignature(const OciSession& s,
                                                      const manifest::Digest& subject,
                                                      std::span<const sign::Resource> files);

// PullSignatureBeside through an open session, for a carton whose MANIFEST
// is `manifest`: the signature file written, or "" (PullCarton calls it
// with its own session when OciOptions::fetch_signature is set).
Result<std::string> PlaceSignature(const OciSession& s, const manifest::Digest& subject,
                                   const manifest::Manifest& manifest,
                                   const std::string& carton_path);

}  // namespace carton::oci::internal
