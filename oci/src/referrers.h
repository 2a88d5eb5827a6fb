// Private to oci/src: what pushing and pulling signatures share
// (referrers.cc, referrers_pull.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::oci::internal {

// Parses a referrer's manifest or a referrers index (untrusted): kCorrupt
// "<what>: not JSON: ..." or "<what>: nested too deep" (they nest 4
// levels: an index, its manifests, a descriptor, its annotations).
Result<nlohmann::json> ParseReferrerJson(std::string_view text, const std::string& what);

}  // namespace carton::oci::internal
