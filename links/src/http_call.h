// One HTTP request with a small body in and a small body out, for the OCI
// registry client: any method, the response's headers, redirects hop by
// hop (http_hop.h). Private to links/src. Large downloads go through
// Transfer (hashed into a file) instead.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/links/fetch.h"
#include "carton/links/http_access.h"

namespace carton::links {

struct HttpCall {
  std::string method = "GET";  // GET, HEAD, POST, PUT, PATCH, DELETE
  std::string url;
  // Sent on every hop: what the request is (Accept, Content-Type, ...).
  std::vector<std::string> headers;
  // Sent to the first URL's scheme, host and port only (Authorization).
  std::vector<std::string> origin_headers;
  // The request body for POST, PUT and PATCH; read during the call only.
  ByteView body;
  // Response body bytes kept; more are counted and dropped.
  std::uint64_t max_body = 1 << 20;
};

struct HttpReply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string url;  // the last hop's
  // Headers of the final response, names in lowercase, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool body_truncated = false;
  std::uint64_t bytes_sent = 0;
  std::string error;  // libcurl's description when code is not CURLE_OK
  // A hop refused before it was made (http_hop.h HopResult::refused).
  Status refused;

  // The first header `name` (lowercase), or "".
  std::string Header(std::string_view name) const;
  // Every header `name` (lowercase), in order.
  std::vector<std::string> Headers(std::string_view name) const;
  // A failure worth another attempt: a connection problem, a timeout, a
  // body cut short, or status 408, 429 or 5xx.
  bool transient() const;
};

// Performs `call` once with `curl` under `access`, with the timeouts and
// redirect limit of `options`. Redirects are followed only for GET and HEAD.
HttpReply Call(CURL* curl, const HttpCall& call, const HttpAccess& access,
               const FetchOptions& options);

}  // namespace carton::links
