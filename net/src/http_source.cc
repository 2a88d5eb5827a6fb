// HTTP range reads with libcurl (http_source.h). Each request is checked:
// 206, a Content-Range naming exactly the bytes asked for and the size seen
// first, no Content-Encoding, the same validator (ETag or Last-Modified).
#include "carton/net/http_source.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "carton/common/ascii.h"
#include "carton/net/url.h"
#include "http_hop.h"
#include "transfer.h"

namespace carton::net {
namespace {

constexpr char kUserAgent[] = "carton";

bool ParseU64(std::string_view s, std::uint64_t* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// "bytes FIRST-LAST/TOTAL" (RFC 9110 14.4); TOTAL may not be "*" here,
// since the size is what Open() learns from it.
struct ContentRange {
  std::uint64_t first = 0, last = 0, total = 0;
};
std::optional<ContentRange> ParseContentRange(std::string_view v) {
  if (v.substr(0, 6) != "bytes ") return std::nullopt;
  v.remove_prefix(6);
  const auto dash = v.find('-'), slash = v.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash)
    return std::nullopt;
  ContentRange r;
  if (!ParseU64(v.substr(0, dash), &r.first) ||
      !ParseU64(v.substr(dash + 1, slash - dash - 1), &r.last) ||
      !ParseU64(v.substr(slash + 1), &r.total) || r.first > r.last || r.last >= r.total) {
    return std::nullopt;
  }
  return r;
}

// The response of one request, as the callbacks saw it.
struct Response {
  CURL* curl = nullptr;
  std::uint64_t cap = 0;  // most body bytes accepted
  bool status_checked = false;
  bool skipping = false;           // the body of a redirect
  std::uint64_t skipped = 0;       // bytes of that body
  bool redirect_too_long = false;  // past kMaxRedirectBodySize: stopped
  long refused_status = 0;
  bool over_cap = false;
  std::string content_range, etag, last_modified, content_encoding;
  std::vector<std::byte> body;
  // Once the request is done: libcurl's result and the last status.
  CURLcode code = CURLE_OK;
  long status = 0;
};

std::size_t OnHeader(char* data, std::size_t, std::size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  std::string_view line(data, n);
  if (line.substr(0, 5) == "HTTP/") {
    // A new response (after a redirect or a 100): forget the last one's headers.
    r->content_range.clear();
    r->etag.clear();
    r->last_modified.clear();
    r->content_encoding.clear();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  const std::string name = AsciiLower(TrimSpace(line.substr(0, colon)));
  const std::string value(TrimSpace(line.substr(colon + 1)));
  if (name == "content-range")
    r->content_range = value;
  else if (name == "etag")
    r->etag = value;
  else if (name == "last-modified")
    r->last_modified = value;
  else if (name == "content-encoding")
    r->content_encoding = AsciiLower(value);
  return n;
}

std::size_t OnBody(char* data, std::size_t, std::size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  if (!r->status_checked) {
    r->status_checked = true;
    long status = 0;
    curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
    if (IsRedirectStatus(status)) {
      r->skipping = true;
    } else if (status != 206) {
      // Anything but 206 is not the range: stop before reading a whole file.
      r->refused_status = status;
      return 0;
    }
  }
  if (r->skipping) {
    r->skipped += n;
    r->redirect_too_long = r->skipped > kMaxRedirectBodySize;
    return r->redirect_too_long ? 0 : n;
  }
  if (n > r->cap - r->body.size()) {
    r->over_cap = true;
    return 0;
  }
  const auto* p = reinterpret_cast<const std::byte*>(data);
  r->body.insert(r->body.end(), p, p + n);
  return n;
}

template <typename T>
bool Set(CURL* curl, CURLoption option, T value) {
  return curl_easy_setopt(curl, option, value) == CURLE_OK;
}

struct Extent {
  std::uint64_t offset = 0;
  std::vector<std::byte> bytes;
};

// Sets one hop's options for a range request (PerformHops sets the rest).
bool ConfigureHop(CURL* h, Response* r, const FetchOptions& f, const std::string& range,
                  char* error_buffer) {
  // Each hop of a redirect starts a response of its own.
  r->status_checked = false;
  r->skipping = false;
  r->skipped = 0;
  return Set(h, CURLOPT_NOSIGNAL, 1L) && Set(h, CURLOPT_ERRORBUFFER, error_buffer) &&
         Set(h, CURLOPT_USERAGENT, kUserAgent) &&
         Set(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(f.connect_timeout.count())) &&
         Set(h, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(f.low_speed_limit)) &&
         Set(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(f.low_speed_time.count())) &&
         Set(h, CURLOPT_RANGE, range.c_str()) && Set(h, CURLOPT_HEADERFUNCTION, &OnHeader) &&
         Set(h, CURLOPT_HEADERDATA, r) && Set(h, CURLOPT_WRITEFUNCTION, &OnBody) &&
         Set(h, CURLOPT_WRITEDATA, r);
}

// Why the answer to `range` is not a 206 that arrived whole, or OK;
// `*transient` tells whether another request may do better.
Status CheckAnswer(const Response& r, const std::string& url, const std::string& range,
                   const char* error_buffer, bool* transient) {
  const CURLcode code = r.code;
  const long status = r.status;
  const std::string what = url + " (range " + range + ")";
  if (r.refused_status == 200 || (code == CURLE_OK && status == 200)) {
    return Unsupported(url +
                       ": the server ignores range requests (it answered 200 with the "
                       "whole file to \"Range: bytes=" +
                       range +
                       "\"); download the "
                       "file first, or serve it from a server that supports ranges");
  }
  if (r.refused_status != 0 || (code == CURLE_OK && status != 206)) {
    const long shown = r.refused_status != 0 ? r.refused_status : status;
    *transient = IsTransientStatus(shown);
    Status s(shown == 404 ? StatusCode::kNotFound : StatusCode::kNetworkError,
             what + ": http status " + std::to_string(shown) + ", expected 206");
    return s;
  }
  if (r.over_cap) {
    return NetworkError(what + ": the server sent more than the " + std::to_string(r.cap) +
                        " bytes asked for");
  }
  if (r.redirect_too_long) {
    return NetworkError(what + ": the body of a redirect passed the limit of " +
                        std::to_string(kMaxRedirectBodySize) + " bytes");
  }
  if (code != CURLE_OK) {
    std::string message = what + ": " + curl_easy_strerror(code);
    if (error_buffer[0] != '\0') message += std::string(" (") + error_buffer + ")";
    *transient = IsTransientCurlError(code);
    return NetworkError(std::move(message));
  }
  return Status::Ok();
}

// The Content-Range of a 206 whose body is the file's own bytes.
Result<ContentRange> ContentRangeOf(const Response& r, const std::string& what) {
  if (!r.content_encoding.empty() && r.content_encoding != "identity") {
    return NetworkError(what + ": the server sent Content-Encoding " + r.content_encoding +
                        " for a range it was not asked to encode");
  }
  auto cr = ParseContentRange(r.content_range);
  if (!cr) {
    return NetworkError(what + ": 206 without a valid Content-Range (\"" + r.content_range + "\")");
  }
  return *cr;
}

// Why the body is not the bytes asked for (`want` of them from where
// `range` starts; 0: any number), or OK.
Status CheckExtent(const Response& r, const ContentRange& cr, const std::string& range,
                   std::uint64_t want, const std::string& what, bool* transient) {
  const std::uint64_t got = cr.last - cr.first + 1;
  if (r.body.size() != got) {
    *transient = true;
    return NetworkError(what + ": Content-Range " + r.content_range + " but " +
                        std::to_string(r.body.size()) + " bytes arrived");
  }
  if (want != 0 || range.front() != '-') {
    std::uint64_t first = 0;
    ParseU64(range.substr(0, range.find('-')), &first);
    if (cr.first != first || (want != 0 && got != want)) {
      return NetworkError(what + ": the server answered with another range (" + r.content_range +
                          ")");
    }
  }
  return Status::Ok();
}

}  // namespace

struct HttpRangeSource::Impl {
  std::string url;
  HttpSourceOptions options;
  HttpAccess access;
  CurlEasy curl;
  std::array<char, CURL_ERROR_SIZE> error_buffer{};
  bool sized = false;
  std::uint64_t size = 0;
  std::string validator;  // ETag, else Last-Modified, of the first response
  mutable std::mutex mu;
  std::list<Extent> cache;  // most recently fetched first
  std::uint64_t cached_bytes = 0;
  HttpSourceStats stats;

  // One request for `range` ("FIRST-LAST" or "-N"); `want` is the number of
  // bytes it must return (0: any number up to the size asked for, for the
  // first request, which learns the size).
  Result<Extent> RequestOnce(const std::string& range, std::uint64_t want, bool* transient) {
    *transient = false;
    CURL* c = curl.get();
    Response r;
    r.curl = c;
    r.cap = want != 0 ? want : options.head_size != 0 ? options.head_size : options.tail_size;
    error_buffer.fill('\0');
    const FetchOptions& f = options.fetch;
    HopRequest request;
    request.access = &access;
    request.origin_headers = f.headers;
    request.max_redirects = f.max_redirects;
    ++stats.requests;
    const HopResult hops = PerformHops(c, url, request, {}, [&](CURL* h) {
      return ConfigureHop(h, &r, f, range, error_buffer.data());
    });
    if (!hops.refused.ok()) return hops.refused;
    if (hops.code == CURLE_FAILED_INIT) return Internal(url + ": libcurl rejected an option");
    r.code = hops.code;
    stats.bytes_received += r.body.size();
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    CARTON_RETURN_IF_ERROR(CheckAnswer(r, url, range, error_buffer.data(), transient));
    const std::string what = url + " (range " + range + ")";
    CARTON_ASSIGN_OR_RETURN(const ContentRange cr, ContentRangeOf(r, what));
    CARTON_RETURN_IF_ERROR(CheckSameFile(cr, !r.etag.empty() ? r.etag : r.last_modified));
    CARTON_RETURN_IF_ERROR(CheckExtent(r, cr, range, want, what, transient));
    return Extent{cr.first, std::move(r.body)};
  }

  // Why the answer (its total size, its validator `v`) is not from the file
  // the first answer was, or OK.
  Status CheckSameFile(const ContentRange& cr, const std::string& v) {
    if (!sized) {
      // The first response: it fixes the size and the validator.
      sized = true;
      size = cr.total;
      validator = v;
    } else if (cr.total != size || v != validator) {
      return NetworkError(url + ": the file changed on the server while it was read (size " +
                          std::to_string(size) + " then " + std::to_string(cr.total) +
                          ", validator \"" + validator + "\" then \"" + v + "\")");
    }
    return Status::Ok();
  }

  // RequestOnce with FetchToFile's retry policy for transient failures.
  Result<Extent> Request(const std::string& range, std::uint64_t want) {
    auto delay = options.fetch.initial_backoff;
    for (int attempt = 1;; ++attempt) {
      bool transient = false;
      auto r = RequestOnce(range, want, &transient);
      if (r.ok() || !transient || attempt >= options.fetch.attempts_per_url) return r;
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, options.fetch.max_backoff);
    }
  }

  void Remember(Extent e) {
    if (e.bytes.size() > options.max_cached_bytes) return;
    cached_bytes += e.bytes.size();
    cache.push_front(std::move(e));
    while (cached_bytes > options.max_cached_bytes && !cache.empty()) {
      cached_bytes -= cache.back().bytes.size();
      cache.pop_back();
    }
  }
};

HttpRangeSource::HttpRangeSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpRangeSource::~HttpRangeSource() = default;

Result<std::unique_ptr<HttpRangeSource>> HttpRangeSource::Open(const std::string& url,
                                                               const HttpSourceOptions& options) {
  const Scheme scheme = SchemeOf(url);
  if (UrlProblem(url) || (scheme != Scheme::kHttp && scheme != Scheme::kHttps)) {
    return InvalidArgument(QuoteUrl(url) + ": not an http or https url");
  }
  if (options.tail_size == 0 || options.block_size == 0) {
    return InvalidArgument("tail_size and block_size must not be 0");
  }
  auto impl = std::make_unique<Impl>();
  impl->url = url;
  impl->options = options;
  CARTON_ASSIGN_OR_RETURN(impl->access, ResolveAccess(options.fetch));
  CARTON_ASSIGN_OR_RETURN(impl->curl, NewCurlHandle());
  // The first answer tells the size (Content-Range: bytes FIRST-LAST/SIZE)
  // and the validator later answers must match.
  auto first = impl->Request(options.head_size != 0 ? "0-" + std::to_string(options.head_size - 1)
                                                    : "-" + std::to_string(options.tail_size),
                             0);
  if (!first.ok()) return first.status();
  impl->Remember(std::move(first).value());
  return std::unique_ptr<HttpRangeSource>(new HttpRangeSource(std::move(impl)));
}

std::uint64_t HttpRangeSource::size() const { return impl_->size; }
const std::string& HttpRangeSource::name() const { return impl_->url; }

HttpSourceStats HttpRangeSource::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

Status HttpRangeSource::ReadAt(std::uint64_t offset, MutableByteView out) const {
  Impl& m = *impl_;
  if (!InBounds(offset, out.size(), m.size)) {
    return InvalidArgument(m.url + ": read of " + std::to_string(out.size()) + " bytes at " +
                           std::to_string(offset) + " is past the end (" + std::to_string(m.size) +
                           " bytes)");
  }
  if (out.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(m.mu);
  for (const Extent& e : m.cache) {
    if (offset >= e.offset && InBounds(offset - e.offset, out.size(), e.bytes.size())) {
      std::memcpy(out.data(), e.bytes.data() + (offset - e.offset), out.size());
      return Status::Ok();
    }
  }
  const std::uint64_t block = m.options.block_size;
  std::uint64_t begin = offset / block * block;
  std::uint64_t end = std::min(m.size, (offset + out.size() + block - 1) / block * block);
  if (end - begin > m.options.max_cached_bytes) {
    begin = offset;  // too large to keep: fetch exactly what was asked
    end = offset + out.size();
  }
  const std::string range = std::to_string(begin) + "-" + std::to_string(end - 1);
  CARTON_ASSIGN_OR_RETURN(Extent e, m.Request(range, end - begin));
  std::memcpy(out.data(), e.bytes.data() + (offset - begin), out.size());
  m.Remember(std::move(e));
  return Status::Ok();
}

}  // namespace carton::net
