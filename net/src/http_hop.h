// One HTTP request that follows its redirects itself, so that every hop is
// checked before a connection is made (net/FORMAT.md "Where carton
// connects"). Private to net/src; used by the fetcher, the range source
// and the OCI client.
//
// libcurl never follows a redirect here (CURLOPT_FOLLOWLOCATION is off):
// each hop is a request of its own, configured afresh:
//   - its URL must pass CheckTarget (the allowlist and the link-local rule);
//   - an opening socket whose address RefusedTarget names is refused (a
//     host name that resolves to a metadata address), so no packet is sent;
//   - the origin's headers (a registry token, say) go only to the scheme,
//     host and port of the first URL; configured per-host headers and netrc
//     credentials only to the hosts they name;
//   - a redirect is followed only to http or https, at most max_redirects
//     times, and only for GET and HEAD.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/net/http_access.h"

namespace carton::net {

// 301, 302, 303, 307, 308: statuses whose Location the hops follow. Body
// callbacks must drop the bodies of these responses.
bool IsRedirectStatus(long status);

struct HopRequest {
  const HttpAccess* access = nullptr;  // REQUIRES: not null
  // Sent only to the first URL's scheme, host and port.
  std::vector<std::string> origin_headers;
  int max_redirects = 5;
  bool follow_redirects = true;
  // Protocols allowed for the first URL; redirects only ever to http(s).
  bool allow_file = false;
};

struct HopResult {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string url;  // the last hop's URL
  // Not OK when a hop was refused before it was made (the allowlist, a
  // link-local target, a redirect to another scheme, too many redirects):
  // kInvalidArgument or kNetworkError naming the URL and the rule.
  Status refused;
};

// Performs the request. For every hop: curl_easy_reset(curl), then
// `configure(curl)` sets everything but the URL, protocols, headers and
// socket callbacks (callbacks, method, body, timeouts, error buffer); it
// returns false when libcurl refuses an option (the result is then
// CURLE_FAILED_INIT). `extra_headers` are sent on every hop (Range, Accept,
// Content-Type: they describe the request, not who makes it).
HopResult PerformHops(CURL* curl, const std::string& url, const HopRequest& request,
                      const std::vector<std::string>& extra_headers,
                      const std::function<bool(CURL*)>& configure);

// The access FetchOptions asks for: its own, or the environment's.
struct FetchOptions;
Result<HttpAccess> ResolveAccess(const FetchOptions& options);

}  // namespace carton::net
