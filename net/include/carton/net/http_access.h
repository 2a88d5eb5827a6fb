// HttpAccess: where carton may connect, and with which credentials. Every
// HTTP request carton makes (FetchToFile, DownloadToFile, HttpRangeSource,
// the OCI registry client) follows one HttpAccess, checked on every hop:
//
//   - the allowlist: when set, the host (and port) of every URL fetched,
//     every redirect target and every token realm must match a pattern;
//   - link-local and cloud-metadata targets (169.254.0.0/16, fe80::/10,
//     metadata.google.internal, ...) are refused by default, both as the
//     host a URL names and as any address a name resolves to, before a
//     connection is made;
//   - per-host headers (`Authorization: Bearer ...` for a model hub) and
//     netrc credentials are sent only to the host they are configured for,
//     never to another host a redirect leads to.
//
// The rules, the environment variables and the error messages are listed in
// net/FORMAT.md "Where carton connects". Thread-safety: plain values and
// pure functions (HttpAccessFromEnvironment reads the environment).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"

namespace carton::net {

// One allowlist entry: "example.com", "*.example.com" (any subdomain, not
// the domain itself), "example.com:8443", "127.0.0.1", "[::1]:5000", or "*"
// (any host; with ":PORT", any host on that port).
struct HostPattern {
  std::string host;  // lowercase, without a trailing dot or IPv6 brackets
  bool any_subdomain = false;
  bool any_host = false;
  std::optional<std::uint16_t> port;  // nullopt: any port

  friend bool operator==(const HostPattern&, const HostPattern&) = default;
};

// Errors: kInvalidArgument naming the pattern and the rule.
Result<HostPattern> ParseHostPattern(std::string_view text);
// The pattern as written by ParseHostPattern's grammar.
std::string ToString(const HostPattern& pattern);
// `host` as a URL gives it (any case, IPv6 with or without brackets, a
// trailing dot allowed); `port` the URL's port or its scheme's default.
bool HostMatches(const HostPattern& pattern, std::string_view host, std::uint16_t port);

// A header sent with requests to the hosts `host` matches.
struct HostHeader {
  HostPattern host;
  std::string header;  // "Name: value"
};

// Parses header configuration: one header per line, "HOST-PATTERN Name:
// value"; blank lines and lines starting with '#' are skipped. Untrusted
// text (it may come from a file). Errors: kInvalidArgument naming the line.
Result<std::vector<HostHeader>> ParseHostHeaders(std::string_view text);

struct HttpAccess {
  // When non-empty, a request goes only to a host that matches one of
  // these (each hop of a redirect is checked before it is made).
  std::vector<HostPattern> allowed_hosts;
  // Allows link-local and cloud-metadata targets (RefusedTarget).
  bool allow_link_local = false;
  // Added to every request to a matching host, and to no other.
  std::vector<HostHeader> headers;
  // Credentials from a netrc file for the host of each request (libcurl's
  // netrc support; a netrc entry names the one host it is for).
  bool use_netrc = true;
  std::string netrc_file;  // empty: libcurl's default, $HOME/.netrc
};

// The access the environment configures:
//   CARTON_ALLOWED_HOSTS     patterns separated by commas or whitespace;
//                            unset or empty: any host
//   CARTON_ALLOW_LINK_LOCAL  "1" allows link-local and metadata targets
//   CARTON_HTTP_HEADERS      ParseHostHeaders text, or "@FILE" to read it
//                            from FILE
//   CARTON_NETRC             a netrc file to use instead of ~/.netrc, or
//                            "off" to use none
// Errors: kInvalidArgument naming the variable and the problem; kNotFound
// or kIoError for an unreadable headers file.
Result<HttpAccess> HttpAccessFromEnvironment();

// Why carton refuses to connect to `host` by default, or nullopt. `host` is
// a name or an address as a URL names it (IPv6 with or without brackets) or
// as a resolver returns it; untrusted. Refused: 169.254.0.0/16 and
// fe80::/10 (link-local, where cloud metadata services answer), the same
// IPv4 addresses mapped into IPv6 (::ffff:0:0/96, 64:ff9b::/96),
// fd00:ec2::254 (a metadata service's IPv6 address), and the name
// metadata.google.internal. The reason names the address and the range.
std::optional<std::string> RefusedTarget(std::string_view host);

// Checks `url` (http or https) against `access` without connecting: its
// host against the allowlist and RefusedTarget. Errors: kInvalidArgument
// "<url>: refused: <rule>".
Status CheckUrlAccess(std::string_view url, const HttpAccess& access);

}  // namespace carton::net
