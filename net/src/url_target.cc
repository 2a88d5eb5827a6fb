#include "carton/net/url_target.h"

#include <curl/curl.h>

#include <memory>

namespace carton::net {
namespace {

struct CurlUrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct CurlFree {
  void operator()(char* p) const { curl_free(p); }
};
using CurlString = std::unique_ptr<char, CurlFree>;

// The part `what` of `u`, or "" when it has none.
std::string Part(CURLU* u, CURLUPart what, unsigned flags = 0) {
  char* out = nullptr;
  if (curl_url_get(u, what, &out, flags) != CURLUE_OK || out == nullptr) return "";
  CurlString owned(out);
  return std::string(owned.get());
}

// At most this many allowlist patterns are shown in a refusal.
constexpr std::size_t kPatternsShown = 8;

}  // namespace

Result<UrlTarget> TargetOf(std::string_view url) {
  std::unique_ptr<CURLU, CurlUrlDeleter> u(curl_url());
  if (!u) return Internal("cannot create a libcurl url handle");
  const std::string text(url);
  if (curl_url_set(u.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK) {
    return InvalidArgument(text + ": not a url libcurl can parse");
  }
  UrlTarget t;
  t.scheme = Part(u.get(), CURLUPART_SCHEME);
  for (char& c : t.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  t.host = NormalizeHost(Part(u.get(), CURLUPART_HOST));
  if (t.host.empty()) return InvalidArgument(text + ": url has no host");
  const std::string port = Part(u.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  const long value = port.empty() ? 0 : std::strtol(port.c_str(), nullptr, 10);
  if (value <= 0 || value > 65535) return InvalidArgument(text + ": url has no valid port");
  t.port = static_cast<std::uint16_t>(value);
  return t;
}

bool SameOrigin(const UrlTarget& a, const UrlTarget& b) {
  return a.scheme == b.scheme && a.host == b.host && a.port == b.port;
}

Status CheckTarget(std::string_view url, const UrlTarget& target, const HttpAccess& access) {
  if (!access.allow_link_local) {
    if (auto why = RefusedTarget(target.host)) {
      return InvalidArgument(std::string(url) + ": refused: " + *why +
                             "; carton does not connect to link-local or cloud metadata "
                             "targets unless CARTON_ALLOW_LINK_LOCAL=1");
    }
  }
  if (access.allowed_hosts.empty()) return Status::Ok();
  for (const HostPattern& p : access.allowed_hosts) {
    if (HostMatches(p, target.host, target.port)) return Status::Ok();
  }
  std::string allowed;
  for (std::size_t i = 0; i < access.allowed_hosts.size() && i < kPatternsShown; ++i) {
    if (i > 0) allowed += ", ";
    allowed += ToString(access.allowed_hosts[i]);
  }
  if (access.allowed_hosts.size() > kPatternsShown) allowed += ", ...";
  return InvalidArgument(std::string(url) + ": refused: host " + target.host + " port " +
                         std::to_string(target.port) +
                         " is not in the allowed hosts (CARTON_ALLOWED_HOSTS: " + allowed + ")");
}

}  // namespace carton::net
