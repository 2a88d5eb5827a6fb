// Registry authentication pieces: WWW-Authenticate challenges, token
// responses, base64. Private to links/src (oci_client.cc).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"

namespace carton::links::oci {

// One challenge of a WWW-Authenticate header: `Bearer realm="...",
// service="...", scope="..."` or `Basic realm="..."`.
struct Challenge {
  std::string scheme;                         // lowercase: "bearer", "basic"
  std::map<std::string, std::string> params;  // names lowercase
};

// Every challenge in the given WWW-Authenticate values (RFC 9110 11.6.1:
// comma-separated challenges of auth-params, values quoted or tokens).
// Untrusted; what cannot be parsed is skipped.
std::vector<Challenge> ParseChallenges(const std::vector<std::string>& values);

// A bearer token from a token endpoint's JSON answer ({"token": ...} or
// {"access_token": ...}, "expires_in" seconds, 60 when absent). Untrusted.
struct Token {
  std::string value;
  std::chrono::seconds lifetime{60};
};
// Errors: kNetworkError naming `realm` (not JSON, no token).
Result<Token> ParseTokenResponse(std::string_view body, std::string_view realm);

// The registry's error in a JSON error body ({"errors": [{"code": ...,
// "message": ...}]}) as "CODE: message; ...", or "" when there is none.
std::string RegistryError(std::string_view body);

std::string Base64Encode(std::string_view bytes);
// Errors: kInvalidArgument.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace carton::links::oci
