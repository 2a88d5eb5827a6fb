// The host and port a URL connects to, parsed by libcurl's URL parser (the
// same one that makes the request).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/net/http_access.h"

namespace carton::net {

struct UrlTarget {
  std::string scheme;      // lowercase
  std::string host;        // lowercase, without IPv6 brackets or a trailing dot
  std::uint16_t port = 0;  // the URL's, else the scheme's default
};

// Errors: kInvalidArgument (libcurl cannot parse it, or it has no host).
Result<UrlTarget> TargetOf(std::string_view url);

// True when both name the same scheme, host and port.
bool SameOrigin(const UrlTarget& a, const UrlTarget& b);

// Checks a parsed URL against `access` (allowlist, RefusedTarget).
// Errors: kInvalidArgument "<url>: refused: <rule>".
Status CheckTarget(std::string_view url, const UrlTarget& target, const HttpAccess& access);

// `host` as HostMatches and RefusedTarget compare it: lowercase, without
// brackets or a trailing dot.
std::string NormalizeHost(std::string_view host);

}  // namespace carton::net
