// Private to oci/src: parsing untrusted JSON with a nesting limit, for the
// files that read JSON (artifact.cc, layout.cc, auth.cc). nlohmann/json's
// exceptions from parsing stop in json.cc; each caller keeps its own
// wording of the two failures.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::oci::internal {

// The deepest nesting read in a carton artifact's JSON: its OCI image
// manifest (artifact.cc) and its config blob (layout.cc).
inline constexpr int kMaxArtifactJsonDepth = 8;

// How a caller words ParseBoundedJson's two failures.
struct JsonErrorWording {
  // Not valid JSON: this code, and `invalid_prefix` followed by
  // nlohmann/json's message (which gives the byte offset).
  StatusCode invalid_code = StatusCode::kInvalidArgument;
  std::string invalid_prefix;
  // Valid so far, but an object or array nests deeper than the limit.
  StatusCode too_deep_code = StatusCode::kInvalidArgument;
  std::string too_deep_message;
};

// Parses untrusted `text`, stopping at the first object or array deeper
// than `max_depth` (the top-level value is depth 0), since deeply nested
// input would recurse. Invalid JSON is reported before nesting. Errors: as
// `wording` says.
Result<nlohmann::json> ParseBoundedJson(std::string_view text, int max_depth,
                                        const JsonErrorWording& wording);

}  // namespace carton::oci::internal
