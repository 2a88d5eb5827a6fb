// One download attempt of one URL with libcurl. Private to net/src; the
// retry and fallback policy lives in fetch.cc.
#pragma once

#include <curl/curl.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/net/fetch.h"
#include "carton/net/http_access.h"

namespace carton::net {

struct CurlEasyDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;

// Most bytes of a redirect's body read (and dropped) before the transfer is
// stopped: a redirect that never ends its body is never followed.
inline constexpr std::uint64_t kMaxRedirectBodySize = 1 << 20;

// HTTP statuses worth another attempt: 408, 429 and 5xx.
bool IsTransientStatus(long status);
// libcurl failures worth another attempt: connection problems, timeouts,
// bodies cut short.
bool IsTransientCurlError(CURLcode code);

// A new libcurl handle; initialises libcurl once per process first.
// Errors: kInternal.
Result<CurlEasy> NewCurlHandle();

struct AttemptResult {
  // OK when the destination now holds the verified bytes. Otherwise the
  // message starts with the URL.
  Status status;
  // Worth another attempt at the same URL.
  bool transient = false;
  // The server's Retry-After, when it sent one.
  std::optional<std::chrono::seconds> retry_after;
  // A local failure (the temporary file): no other URL can do better.
  bool fatal = false;
};

// What one attempt downloads, and where to. The pointers are borrowed for
// the attempt.
struct AttemptRequest {
  // REQUIRES: passed UrlProblem() and its scheme is allowed by `options`.
  std::string url;
  // The sha256 the bytes must have; not checked when null.
  const manifest::Digest* expected = nullptr;
  // The size the bytes must have; not checked when 0.
  std::uint64_t expected_size_or_0 = 0;
  // The file to write; not used with `stream`.
  std::string dest_path;
  // Where the bytes go instead of `dest_path`, when not null.
  StreamSink* stream = nullptr;
  const FetchOptions* options = nullptr;  // REQUIRES: not null
  const HttpAccess* access = nullptr;     // REQUIRES: not null
};

// A libcurl easy handle, reused across attempts so connections are kept.
// Move-only; one thread at a time.
class Transfer {
 public:
  // Errors: kInternal when libcurl cannot be initialised.
  static Result<Transfer> Create();

  // Downloads `request.url` into a temporary file beside `dest_path`,
  // hashing the decoded bytes (on a HashingWriter's thread while libcurl
  // decodes), and renames it over `dest_path` only if the size (when
  // `expected_size_or_0` is non-zero) and sha256 (when `expected` is not
  // null) match. Redirects are followed hop by hop under `access`
  // (http_hop.h). With `stream`, the bytes go to it instead (from the first
  // byte, after stream->Restart(); `dest_path` and keep_partial are not
  // used).
  AttemptResult Attempt(const AttemptRequest& request);

 private:
  explicit Transfer(CurlEasy curl) : curl_(std::move(curl)) {}
  // libcurl's detail for the last error. The handle keeps a pointer to it,
  // so it is declared first and destroyed after the handle.
  std::array<char, CURL_ERROR_SIZE> error_buffer_{};
  CurlEasy curl_;
};

}  // namespace carton::net
