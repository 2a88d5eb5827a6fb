// HttpClient: small HTTP exchanges (any method, a small body in and out,
// the response's headers), for protocols spoken over HTTP such as the OCI
// registry API. Every hop follows the rules of net/FORMAT.md "Where carton
// connects" (redirects are followed hop by hop, and only for GET and HEAD).
// Large downloads go through fetch.h instead (hashed into a file).
//
// Thread-safety: one HttpClient may be used from many threads at once;
// each Send takes a connection from the client's pool (or opens one) and
// gives it back when done.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/net/fetch.h"
#include "carton/net/http_access.h"

namespace carton::net {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT, PATCH, DELETE
  std::string url;
  // Sent on every hop: what the request is (Accept, Content-Type, ...).
  std::vector<std::string> headers;
  // Sent to the first URL's scheme, host and port only (Authorization).
  std::vector<std::string> origin_headers;
  // The request body for POST, PUT and PATCH; read during the call only.
  ByteView body;
  // Response body bytes kept. The transfer stops as soon as the body passes
  // this: the response is then answered, with body_truncated set and the
  // first max_body bytes in body. A redirect's body is dropped; one past
  // 1 MiB is a transport failure.
  std::uint64_t max_body = 1 << 20;
};

struct HttpResponse {
  // Set when the exchange did not complete (no connection, a timeout, a
  // body cut short, the deadline): libcurl's description, or "no complete
  // answer within N s (CARTON_HTTP_TIMEOUT)", and whether another attempt
  // may do better (not after the deadline).
  bool transport_failed = false;
  bool transport_transient = false;
  bool deadline_passed = false;
  std::string error;
  long status = 0;
  std::string url;  // the last hop's
  // Headers of the final response, names in lowercase, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool body_truncated = false;  // the body passed max_body: the transfer stopped there
  std::uint64_t bytes_sent = 0;
  // A hop refused before it was made: kInvalidArgument or kNetworkError
  // naming the URL and the rule.
  Status refused;

  // True when a response arrived (whatever its status).
  bool answered() const { return refused.ok() && !transport_failed; }
  // The first header `name` (lowercase), or "".
  std::string Header(std::string_view name) const;
  // Every header `name` (lowercase), in order.
  std::vector<std::string> Headers(std::string_view name) const;
  // A failure worth another attempt: a connection problem, a timeout, a
  // body cut short, or status 408, 429 or 5xx.
  bool transient() const;
};

class HttpClient {
 public:
  // A client with the timeouts, redirect limit and access rules of
  // `options` (its access, or the environment's: HttpAccessFromEnvironment;
  // its exchange deadline: ResolveExchangeTimeout). Makes no request.
  // Errors: those of HttpAccessFromEnvironment and ResolveExchangeTimeout;
  // kInternal when libcurl cannot be initialised.
  static Result<std::unique_ptr<HttpClient>> Create(const FetchOptions& options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Performs `request` once, its redirects included, within the exchange
  // deadline (the resolved exchange_timeout, plus one second per
  // kExchangeMinSendRate bytes of request.body; net/FORMAT.md "Small
  // exchanges"). Errors are in the response (refused, transport_failed,
  // deadline_passed); kInternal only when no connection handle can be made.
  // The response comes from an untrusted server.
  Result<HttpResponse> Send(const HttpRequest& request) const;

  const FetchOptions& options() const;
  const HttpAccess& access() const;
  // The resolved exchange_timeout (before the time added for a body).
  std::chrono::seconds exchange_timeout() const;

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `s` percent-encoded for a URL's query or path component.
std::string EscapeUrlComponent(std::string_view s);

}  // namespace carton::net
