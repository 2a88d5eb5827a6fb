// Private to tools/src: the one JSON schema of every command's --json
// output (docs/JSON.md). Every document is an object with "schema": 1;
// a failed command prints {"schema": 1, "ok": false, "error": {"code",
// "message"}}.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "carton/common/status.h"

namespace carton::cli {

using Json = nlohmann::ordered_json;

// The version of the documents below; bumped only for an incompatible
// change (a key removed or its meaning changed).
inline constexpr int kJsonSchema = 1;

// A new document: {"schema": 1}.
Json JsonDocument();

// The error code's name in documents: "invalid_argument", "not_found",
// "corrupt", "unsupported", "io_error", "network", "internal".
std::string JsonErrorCode(StatusCode code);

// {"code": ..., "message": ...}.
Json ErrorJson(const Status& status);

// Prints `j` on stdout on one line (so documents of several runs can be
// appended to one file and read line by line); invalid UTF-8 in names
// becomes U+FFFD rather than an exception.
void PrintJson(const Json& j);

// For commands given several inputs: one input's document goes in
// "results" of {"schema": 1, "ok": ..., "results": [...]}; a single input
// prints its document as it is. Each result has "ok".
void PrintJsonResults(Json results);

}  // namespace carton::cli
