// The retry and fallback policy around single transfers (FORMAT.md
// "Fetching").
#include "carton/net/fetch.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "carton/net/url.h"
#include "http_hop.h"
#include "transfer.h"

namespace carton::net {
namespace {

Status CheckOptions(const FetchOptions& options, std::uint64_t expected_size_or_0) {
  if (options.attempts_per_url < 1) return InvalidArgument("attempts_per_url must be at least 1");
  if (options.max_redirects < 0) return InvalidArgument("max_redirects must not be negative");
  if (options.connect_timeout.count() < 0 || options.low_speed_time.count() < 0 ||
      options.initial_backoff.count() < 0 || options.max_backoff.count() < 0 ||
      options.max_retry_after.count() < 0) {
    return InvalidArgument("fetch timeouts and delays must not be negative");
  }
  if (expected_size_or_0 > options.max_decoded_size) {
    return InvalidArgument("expected size " + std::to_string(expected_size_or_0) +
                           " exceeds max_decoded_size " + std::to_string(options.max_decoded_size));
  }
  return Status::Ok();
}

// Why `url` may not be tried at all, or OK.
Status CheckAllowed(const std::string& url, const FetchOptions& options) {
  if (auto problem = UrlProblem(url)) {
    return InvalidArgument(QuoteUrl(url) + ": " + *problem);
  }
  if (SchemeOf(url) == Scheme::kFile && !options.allow_file_links) {
    return InvalidArgument(url + ": file links are not allowed (allow_file_links is off)");
  }
  return Status::Ok();
}

std::chrono::milliseconds Backoff(const FetchOptions& options, int failed_attempts) {
  auto delay = options.initial_backoff;
  for (int i = 1; i < failed_attempts && delay < options.max_backoff; ++i) delay *= 2;
  return std::min(delay, options.max_backoff);
}

// One Status for all URLs' failures: their common code if they share one,
// else kNetworkError; the message lists each failure in order.
Status Aggregate(const manifest::Digest& expected, const std::vector<Status>& failures) {
  StatusCode code = failures.front().code();
  std::string message = "sha256 " + manifest::ToHex(expected) +
                        (failures.size() == 1 ? ": the only url failed: " : ": every url failed: ");
  for (std::size_t i = 0; i < failures.size(); ++i) {
    if (failures[i].code() != code) code = StatusCode::kNetworkError;
    if (i > 0) message += "; ";
    message += failures[i].message();
  }
  return Status(code, std::move(message));
}

// Attempts `url` until it succeeds, fails for good, or runs out of
// attempts. A failure's message names the attempts when there were several.
AttemptResult TryUrl(Transfer& transfer, const AttemptRequest& request) {
  const FetchOptions& options = *request.options;
  for (int attempt = 1;; ++attempt) {
    AttemptResult r = transfer.Attempt(request);
    if (r.status.ok() || r.fatal) return r;
    if (!r.transient || attempt == options.attempts_per_url) {
      if (attempt > 1) {
        r.status = Status(r.status.code(),
                          r.status.message() + " (after " + std::to_string(attempt) + " attempts)");
      }
      return r;
    }
    const auto delay = r.retry_after ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::min(*r.retry_after, options.max_retry_after))
                                     : Backoff(options, attempt);
    std::this_thread::sleep_for(delay);
  }
}

}  // namespace

Result<std::chrono::seconds> ResolveExchangeTimeout(const FetchOptions& options) {
  if (options.exchange_timeout) {
    if (options.exchange_timeout->count() <= 0) {
      return InvalidArgument("exchange_timeout must be positive");
    }
    return *options.exchange_timeout;
  }
  const char* v = std::getenv("CARTON_HTTP_TIMEOUT");
  if (v == nullptr || v[0] == '\0') return kDefaultExchangeTimeout;
  const std::string_view text(v);
  std::int64_t seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 1 ||
      seconds > kMaxExchangeTimeoutSeconds) {
    return InvalidArgument("CARTON_HTTP_TIMEOUT: \"" + std::string(text) +
                           "\" is not a whole number of seconds from 1 to " +
                           std::to_string(kMaxExchangeTimeoutSeconds));
  }
  return std::chrono::seconds(seconds);
}

Status FetchToFile(const std::vector<std::string>& urls, const manifest::Digest& expected,
                   std::uint64_t expected_size_or_0, const std::string& dest_path,
                   const FetchOptions& options) {
  CARTON_RETURN_IF_ERROR(CheckOptions(options, expected_size_or_0));
  if (urls.empty()) {
    return InvalidArgument("sha256 " + manifest::ToHex(expected) + ": no urls to fetch from");
  }
  CARTON_ASSIGN_OR_RETURN(const HttpAccess access, ResolveAccess(options));
  CARTON_ASSIGN_OR_RETURN(Transfer transfer, Transfer::Create());

  std::vector<Status> failures;
  for (const std::string& url : urls) {
    if (Status allowed = CheckAllowed(url, options); !allowed.ok()) {
      failures.push_back(std::move(allowed));
      continue;
    }
    AttemptResult r = TryUrl(transfer, {.url = url,
                                        .expected = &expected,
                                        .expected_size_or_0 = expected_size_or_0,
                                        .dest_path = dest_path,
                                        .options = &options,
                                        .access = &access});
    if (r.status.ok() || r.fatal) return r.status;
    failures.push_back(std::move(r.status));
  }
  return Aggregate(expected, failures);
}

Status FetchToStream(const std::vector<std::string>& urls, const manifest::Digest& expected,
                     std::uint64_t size, StreamSink& sink, const FetchOptions& options) {
  CARTON_RETURN_IF_ERROR(CheckOptions(options, size));
  if (size == 0) {
    return InvalidArgument("sha256 " + manifest::ToHex(expected) +
                           ": a streamed fetch needs the size");
  }
  if (urls.empty()) {
    return InvalidArgument("sha256 " + manifest::ToHex(expected) + ": no urls to fetch from");
  }
  CARTON_ASSIGN_OR_RETURN(const HttpAccess access, ResolveAccess(options));
  CARTON_ASSIGN_OR_RETURN(Transfer transfer, Transfer::Create());
  FetchOptions o = options;
  o.keep_partial = false;
  o.on_written = nullptr;
  std::vector<Status> failures;
  for (const std::string& url : urls) {
    if (Status allowed = CheckAllowed(url, o); !allowed.ok()) {
      failures.push_back(std::move(allowed));
      continue;
    }
    AttemptResult r = TryUrl(transfer, {.url = url,
                                        .expected = &expected,
                                        .expected_size_or_0 = size,
                                        .dest_path = "",
                                        .stream = &sink,
                                        .options = &o,
                                        .access = &access});
    if (r.status.ok() || r.fatal) return r.status;
    failures.push_back(std::move(r.status));
  }
  return Aggregate(expected, failures);
}

Status DownloadToFile(const std::string& url, const std::string& dest_path,
                      const FetchOptions& options) {
  CARTON_RETURN_IF_ERROR(CheckOptions(options, 0));
  CARTON_RETURN_IF_ERROR(CheckAllowed(url, options));
  CARTON_ASSIGN_OR_RETURN(const HttpAccess access, ResolveAccess(options));
  CARTON_ASSIGN_OR_RETURN(Transfer transfer, Transfer::Create());
  return TryUrl(transfer,
                {.url = url, .dest_path = dest_path, .options = &options, .access = &access})
      .status;
}

}  // namespace carton::net
