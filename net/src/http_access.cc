// HttpAccess: host patterns, header configuration, the environment, and the
// link-local rule (net/FORMAT.md "Where carton connects").
#include "carton/net/http_access.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "carton/common/ascii.h"
#include "carton/common/atomic_file.h"
#include "carton/common/bytes.h"
#include "carton/net/url_target.h"

namespace carton::net {
namespace {

constexpr std::string_view kMetadataName = "metadata.google.internal";
// Most header lines taken from CARTON_HTTP_HEADERS, and most bytes of it.
constexpr std::size_t kMaxHeaderLines = 1024;
constexpr std::size_t kMaxHeaderText = 1 << 20;

bool IsHostChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '-' || c == '.' || c == '_';
}

bool ParsePort(std::string_view s, std::uint16_t* port) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value == 0 || value > 65535) {
    return false;
  }
  *port = static_cast<std::uint16_t>(value);
  return true;
}

const char* NonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

// The 4 bytes of an IPv4 address, from dotted text or an IPv6 address that
// embeds one (::ffff:a.b.c.d, 64:ff9b::a.b.c.d).
std::optional<std::array<unsigned char, 4>> EmbeddedIpv4(const unsigned char* v6) {
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr unsigned char kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(v6, kMapped, 12) != 0 && std::memcmp(v6, kNat64, 12) != 0) return std::nullopt;
  return std::array<unsigned char, 4>{v6[12], v6[13], v6[14], v6[15]};
}

std::optional<std::string> RefusedIpv4(const unsigned char* a, std::string_view shown) {
  if (a[0] == 169 && a[1] == 254) {
    return std::string(shown) + " is a link-local address (169.254.0.0/16)";
  }
  return std::nullopt;
}

}  // namespace

std::string NormalizeHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  while (!host.empty() && host.back() == '.') host.remove_suffix(1);
  return AsciiLower(host);
}

Result<HostPattern> ParseHostPattern(std::string_view text) {
  const std::string_view original = text;
  auto bad = [&](std::string_view why) {
    return InvalidArgument("host pattern \"" + std::string(original) + "\": " + std::string(why));
  };
  text = TrimSpace(text);
  if (text.empty()) return bad("empty");
  HostPattern p;
  std::string_view host = text;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad("no closing ']'");
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      std::uint16_t port = 0;
      if (rest.front() != ':' || !ParsePort(rest.substr(1), &port)) {
        return bad("the port must be a number from 1 to 65535");
      }
      p.port = port;
    }
    in6_addr a{};
    if (::inet_pton(AF_INET6, std::string(host).c_str(), &a) != 1) {
      return bad("not an IPv6 address inside [...]");
    }
  } else if (std::count(text.begin(), text.end(), ':') >= 2) {
    in6_addr a{};  // a bare IPv6 address: no port
    if (::inet_pton(AF_INET6, std::string(text).c_str(), &a) != 1) {
      return bad("not an IPv6 address (write [ADDRESS]:PORT for a port)");
    }
  } else if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    std::uint16_t port = 0;
    if (!ParsePort(text.substr(colon + 1), &port)) {
      return bad("the port must be a number from 1 to 65535");
    }
    p.port = port;
  }
  if (host == "*") {
    p.any_host = true;
    return p;
  }
  if (host.substr(0, 2) == "*.") {
    p.any_subdomain = true;
    host.remove_prefix(2);
  }
  p.host = NormalizeHost(host);
  if (p.host.empty()) return bad("no host");
  if (p.host.find(':') == std::string::npos) {
    for (char c : p.host) {
      if (!IsHostChar(c)) return bad("a host holds only letters, digits, '-', '_' and '.'");
    }
    if (p.host.find('*') != std::string::npos) return bad("'*' only as \"*\" or \"*.domain\"");
  } else if (p.any_subdomain) {
    return bad("\"*.\" needs a domain name");
  }
  return p;
}

std::string ToString(const HostPattern& p) {
  std::string host = p.any_host ? "*" : (p.any_subdomain ? "*." : "") + p.host;
  const bool v6 = host.find(':') != std::string::npos;
  if (!p.port) return host;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(*p.port);
}

bool HostMatches(const HostPattern& p, std::string_view host, std::uint16_t port) {
  if (p.port && *p.port != port) return false;
  if (p.any_host) return true;
  const std::string h = NormalizeHost(host);
  if (p.any_subdomain) {
    return h.size() > p.host.size() + 1 && h.ends_with(p.host) &&
           h[h.size() - p.host.size() - 1] == '.';
  }
  if (h == p.host) return true;
  // Two spellings of one IPv6 address.
  in6_addr a{}, b{};
  return ::inet_pton(AF_INET6, h.c_str(), &a) == 1 &&
         ::inet_pton(AF_INET6, p.host.c_str(), &b) == 1 && std::memcmp(&a, &b, sizeof(a)) == 0;
}

Result<std::vector<HostHeader>> ParseHostHeaders(std::string_view text) {
  if (text.size() > kMaxHeaderText) {
    return InvalidArgument("header configuration: " + std::to_string(text.size()) +
                           " bytes, more than the limit of " + std::to_string(kMaxHeaderText));
  }
  std::vector<HostHeader> out;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_number;
    line = TrimSpace(line);
    if (line.empty() || line.front() == '#') continue;
    auto bad = [&](std::string_view why) {
      return InvalidArgument("header configuration line " + std::to_string(line_number) + ": " +
                             std::string(why));
    };
    if (out.size() == kMaxHeaderLines) return bad("more than 1024 headers");
    const auto space = line.find_first_of(" \t");
    if (space == std::string_view::npos) return bad("expected \"HOST-PATTERN Name: value\"");
    auto pattern = ParseHostPattern(line.substr(0, space));
    if (!pattern.ok()) return bad(pattern.status().message());
    const std::string_view header = TrimSpace(line.substr(space + 1));
    const auto colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return bad("expected \"HOST-PATTERN Name: value\"");
    }
    for (char c : header.substr(0, colon)) {
      const auto u = static_cast<unsigned char>(c);
      if (!std::isalnum(u) && std::strchr("!#$%&'*+-.^_`|~", c) == nullptr) {
        return bad("the header name \"" + std::string(header.substr(0, colon)) +
                   "\" holds a character other than letters, digits and !#$%&'*+-.^_`|~");
      }
    }
    for (char c : header) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) return bad("the header holds a control character");
    }
    out.push_back({std::move(pattern).value(), std::string(header)});
  }
  return out;
}

Result<HttpAccess> HttpAccessFromEnvironment() {
  HttpAccess access;
  if (const char* hosts = NonEmptyEnv("CARTON_ALLOWED_HOSTS")) {
    std::string_view rest(hosts);
    while (!rest.empty()) {
      const auto end = rest.find_first_of(", \t\n");
      const std::string_view item = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      if (item.empty()) continue;
      auto p = ParseHostPattern(item);
      if (!p.ok()) return p.status().WithContext("CARTON_ALLOWED_HOSTS");
      access.allowed_hosts.push_back(std::move(p).value());
    }
  }
  if (const char* v = NonEmptyEnv("CARTON_ALLOW_LINK_LOCAL")) {
    const std::string value = AsciiLower(v);
    if (value == "1" || value == "yes" || value == "true") {
      access.allow_link_local = true;
    } else if (value != "0" && value != "no" && value != "false") {
      return InvalidArgument("CARTON_ALLOW_LINK_LOCAL: \"" + std::string(v) + "\" is not 1 or 0");
    }
  }
  if (const char* v = NonEmptyEnv("CARTON_HTTP_HEADERS")) {
    std::string text = v;
    if (text.front() == '@') {
      const std::string path = text.substr(1);
      auto bytes = ReadFile(path);
      if (!bytes.ok()) return bytes.status().WithContext("CARTON_HTTP_HEADERS");
      text.assign(AsChars(*bytes));
      auto headers = ParseHostHeaders(text);
      if (!headers.ok()) return headers.status().WithContext("CARTON_HTTP_HEADERS: " + path);
      access.headers = std::move(headers).value();
    } else {
      auto headers = ParseHostHeaders(text);
      if (!headers.ok()) return headers.status().WithContext("CARTON_HTTP_HEADERS");
      access.headers = std::move(headers).value();
    }
  }
  if (const char* v = NonEmptyEnv("CARTON_NETRC")) {
    const std::string value = v;
    if (AsciiLower(value) == "off" || value == "0") {
      access.use_netrc = false;
    } else {
      access.netrc_file = value;
    }
  }
  return access;
}

std::optional<std::string> RefusedTarget(std::string_view host_text) {
  const std::string host = NormalizeHost(host_text);
  if (host == kMetadataName) {
    return host + " is a cloud metadata service";
  }
  unsigned char v4[4];
  if (::inet_pton(AF_INET, host.c_str(), v4) == 1) return RefusedIpv4(v4, host);
  // An IPv6 literal may carry a zone ("fe80::1%eth0"); the address decides.
  const std::string address = host.substr(0, host.find('%'));
  unsigned char v6[16];
  if (::inet_pton(AF_INET6, address.c_str(), v6) != 1) return std::nullopt;
  if (v6[0] == 0xfe && (v6[1] & 0xc0) == 0x80) {
    return host + " is a link-local address (fe80::/10)";
  }
  static constexpr unsigned char kAwsMetadata[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                                     0,    0,    0,    0,    0, 0, 0x02, 0x54};
  if (std::memcmp(v6, kAwsMetadata, 16) == 0) return host + " is a cloud metadata address";
  if (auto embedded = EmbeddedIpv4(v6)) return RefusedIpv4(embedded->data(), host);
  return std::nullopt;
}

Status CheckUrlAccess(std::string_view url, const HttpAccess& access) {
  CARTON_ASSIGN_OR_RETURN(UrlTarget target, TargetOf(url));
  return CheckTarget(url, target, access);
}

}  // namespace carton::net
