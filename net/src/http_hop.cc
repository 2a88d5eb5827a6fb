#include "http_hop.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>
#include <optional>

#include "carton/net/fetch.h"
#include "carton/net/url.h"
#include "carton/net/url_target.h"

namespace carton::net {
namespace {

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// Refuses sockets to forbidden addresses: the check after name resolution,
// so a host name that resolves to a metadata address is refused before any
// packet is sent.
struct AddressGuard {
  bool allow_link_local = false;
  std::optional<std::string> refused;  // the first reason, for the message
};

curl_socket_t OpenSocket(void* user, curlsocktype, curl_sockaddr* address) {
  auto* guard = static_cast<AddressGuard*>(user);
  if (!guard->allow_link_local) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = nullptr;
    if (address->family == AF_INET) {
      raw = &reinterpret_cast<const sockaddr_in*>(&address->addr)->sin_addr;
    } else if (address->family == AF_INET6) {
      raw = &reinterpret_cast<const sockaddr_in6*>(&address->addr)->sin6_addr;
    }
    if (raw != nullptr && ::inet_ntop(address->family, raw, text, sizeof(text)) != nullptr) {
      if (auto why = RefusedTarget(text)) {
        if (!guard->refused) guard->refused = std::move(why);
        return CURL_SOCKET_BAD;
      }
    }
  }
  return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

template <typename T>
bool Set(CURL* curl, CURLoption option, T value) {
  return curl_easy_setopt(curl, option, value) == CURLE_OK;
}

bool Append(Slist& list, const std::string& header) {
  curl_slist* next = curl_slist_append(list.get(), header.c_str());
  if (next == nullptr) return false;
  (void)list.release();
  list.reset(next);
  return true;
}

bool IsWeb(const std::string& scheme) { return scheme == "http" || scheme == "https"; }

// The checked target of hop `hop`, to `url`: refused when not http(s), or
// by CheckTarget (the allowlist, the link-local rule).
Result<UrlTarget> CheckHop(const std::string& url, const std::string& first_url, int hop,
                           const HttpAccess& access) {
  auto parsed = TargetOf(url);
  if (!parsed.ok()) return parsed.status();
  if (!IsWeb(parsed->scheme)) {
    return InvalidArgument(url + ": only http and https urls are fetched");
  }
  if (Status s = CheckTarget(url, *parsed, access); !s.ok()) {
    return hop == 0 ? std::move(s) : Status(s.code(), first_url + ": redirect to " + s.message());
  }
  return std::move(parsed).value();
}

// Appends the hop's headers: `extra_headers`, then, for a web `target`, the
// origin's (only to the origin) and the configured hosts' (only to them).
bool AppendHeaders(Slist& headers, const std::vector<std::string>& extra_headers,
                   const HopRequest& request, const std::optional<UrlTarget>& target,
                   const std::optional<UrlTarget>& origin) {
  bool ok = true;
  for (const std::string& h : extra_headers) ok = ok && Append(headers, h);
  if (target) {
    if (origin && SameOrigin(*origin, *target)) {
      for (const std::string& h : request.origin_headers) ok = ok && Append(headers, h);
    }
    for (const HostHeader& h : request.access->headers) {
      if (HostMatches(h.host, target->host, target->port)) ok = ok && Append(headers, h.header);
    }
  }
  return ok;
}

// Sets the options PerformHops owns: the URL, the protocols, no redirects,
// the socket guard, the headers and netrc.
bool SetHopOptions(CURL* curl, const std::string& url, bool is_file, const Slist& headers,
                   AddressGuard* guard, const HttpAccess& access) {
  bool ok = Set(curl, CURLOPT_URL, url.c_str()) &&
            Set(curl, CURLOPT_PROTOCOLS_STR, is_file ? "file" : "http,https") &&
            Set(curl, CURLOPT_FOLLOWLOCATION, 0L) &&
            Set(curl, CURLOPT_OPENSOCKETFUNCTION, &OpenSocket) &&
            Set(curl, CURLOPT_OPENSOCKETDATA, guard) &&
            (headers == nullptr || Set(curl, CURLOPT_HTTPHEADER, headers.get()));
  if (ok && !is_file && access.use_netrc) {
    ok = Set(curl, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL)) &&
         (access.netrc_file.empty() || Set(curl, CURLOPT_NETRC_FILE, access.netrc_file.c_str()));
  }
  return ok;
}

// Where the redirect that answered hop `hop` to `url` leads; nullopt when
// there is no Location to follow. Errors: a redirect that is refused.
Result<std::optional<std::string>> RedirectTarget(CURL* curl, const std::string& url, int hop,
                                                  int max_redirects) {
  char* location = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) != CURLE_OK ||
      location == nullptr) {
    return std::optional<std::string>();  // a 3xx without a usable Location is the final answer
  }
  std::string next = location;
  auto next_target = TargetOf(next);
  if (!next_target.ok() || !IsWeb(next_target->scheme)) {
    return NetworkError(url + ": redirect to " + next +
                        " refused (only http and https redirects are followed)");
  }
  if (hop >= max_redirects) {
    return NetworkError(url + ": too many redirects (more than " + std::to_string(max_redirects) +
                        ")");
  }
  return std::optional<std::string>(std::move(next));
}

}  // namespace

bool IsRedirectStatus(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

Result<HttpAccess> ResolveAccess(const FetchOptions& options) {
  if (options.access) return *options.access;
  return HttpAccessFromEnvironment();
}

HopResult PerformHops(CURL* curl, const std::string& first_url, const HopRequest& request,
                      const std::vector<std::string>& extra_headers,
                      const std::function<bool(CURL*)>& configure) {
  HopResult result;
  std::string url = first_url;
  std::optional<UrlTarget> origin;
  for (int hop = 0;; ++hop) {
    result.url = url;
    result.status = 0;
    result.code = CURLE_OK;
    const bool is_file = hop == 0 && request.allow_file && SchemeOf(url) == Scheme::kFile;
    std::optional<UrlTarget> target;
    if (!is_file) {
      auto checked = CheckHop(url, first_url, hop, *request.access);
      if (!checked.ok()) {
        result.refused = checked.status();
        return result;
      }
      target = std::move(checked).value();
      if (hop == 0) origin = target;
    }

    curl_easy_reset(curl);
    Slist headers;
    AddressGuard guard;
    guard.allow_link_local = request.access->allow_link_local;
    if (!configure(curl) || !AppendHeaders(headers, extra_headers, request, target, origin) ||
        !SetHopOptions(curl, url, is_file, headers, &guard, *request.access)) {
      result.code = CURLE_FAILED_INIT;
      return result;
    }
    result.code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
    if (guard.refused && result.code != CURLE_OK) {
      result.refused = InvalidArgument(url + ": refused: " + *guard.refused +
                                       " (the address its host resolves to); carton does not "
                                       "connect to link-local or cloud metadata targets unless "
                                       "CARTON_ALLOW_LINK_LOCAL=1");
      return result;
    }
    if (result.code != CURLE_OK || !request.follow_redirects || is_file ||
        !IsRedirectStatus(result.status)) {
      return result;
    }
    auto next = RedirectTarget(curl, url, hop, request.max_redirects);
    if (!next.ok()) {
      result.refused = next.status();
      return result;
    }
    if (!*next) return result;
    url = std::move(**next);
  }
}

}  // namespace carton::net
