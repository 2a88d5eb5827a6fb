#include "carton/net/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <mutex>

#include "carton/common/ascii.h"
#include "http_hop.h"
#include "transfer.h"

namespace carton::net {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kUserAgent[] = "carton";
// libcurl's upload buffer (default 64 KiB): larger chunks mean fewer read
// callbacks and send calls per GiB.
constexpr long kUploadBufferSize = 2 << 20;

struct State {
  CURL* curl = nullptr;
  const HttpRequest* call = nullptr;
  HttpResponse* reply = nullptr;
  std::uint64_t sent = 0;  // offset into the request body
  bool skipping = false;   // a redirect's body
  bool status_checked = false;
  std::uint64_t skipped = 0;       // bytes of the redirect's body
  bool redirect_too_long = false;  // past kMaxRedirectBodySize: stopped
  Clock::time_point deadline;      // of the whole exchange, every hop
};

std::size_t OnHeader(char* data, std::size_t, std::size_t n, void* user) {
  auto* st = static_cast<State*>(user);
  const std::string_view line(data, n);
  if (line.substr(0, 5) == "HTTP/") {
    st->reply->headers.clear();  // a new response: a redirect's, or after a 100
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  st->reply->headers.emplace_back(AsciiLower(TrimSpace(line.substr(0, colon))),
                                  std::string(TrimSpace(line.substr(colon + 1))));
  return n;
}

std::size_t OnBody(char* data, std::size_t, std::size_t n, void* user) {
  auto* st = static_cast<State*>(user);
  if (!st->status_checked) {
    st->status_checked = true;
    long status = 0;
    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
    st->skipping = IsRedirectStatus(status);
  }
  if (st->skipping) {
    st->skipped += n;
    st->redirect_too_long = st->skipped > kMaxRedirectBodySize;
    return st->redirect_too_long ? 0 : n;
  }
  std::string& body = st->reply->body;
  const std::uint64_t room =
      st->call->max_body - std::min<std::uint64_t>(body.size(), st->call->max_body);
  if (n > room) {
    // Past the limit: keep what fits and stop the transfer here (libcurl
    // ends it with CURLE_WRITE_ERROR), so a body that never ends costs no
    // more than max_body. Call reports the response as answered.
    body.append(data, room);
    st->reply->body_truncated = true;
    return 0;
  }
  body.append(data, n);
  return n;
}

std::size_t OnRead(char* buffer, std::size_t size, std::size_t count, void* user) {
  auto* st = static_cast<State*>(user);
  const ByteView body = st->call->body;
  const std::size_t n = std::min<std::uint64_t>(size * count, body.size() - st->sent);
  std::memcpy(buffer, body.data() + st->sent, n);
  st->sent += n;
  return n;
}

// libcurl rewinds the body when it must send it again (a connection that
// died before the request was answered).
int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* st = static_cast<State*>(user);
  if (origin != SEEK_SET || offset < 0 ||
      static_cast<std::uint64_t>(offset) > st->call->body.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  st->sent = static_cast<std::uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

template <typename T>
bool Set(CURL* curl, CURLoption option, T value) {
  return curl_easy_setopt(curl, option, value) == CURLE_OK;
}

// Sets the options that make the request's method, with its body.
bool SetMethod(CURL* c, State* st) {
  const HttpRequest& call = *st->call;
  if (call.method == "HEAD") return Set(c, CURLOPT_NOBODY, 1L);
  if (call.method == "PUT" || call.method == "PATCH") {
    return Set(c, CURLOPT_UPLOAD, 1L) &&
           Set(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(call.body.size())) &&
           Set(c, CURLOPT_READFUNCTION, &OnRead) && Set(c, CURLOPT_READDATA, st) &&
           Set(c, CURLOPT_SEEKFUNCTION, &OnSeek) && Set(c, CURLOPT_SEEKDATA, st) &&
           Set(c, CURLOPT_UPLOAD_BUFFERSIZE, kUploadBufferSize) &&
           (call.method == "PUT" || Set(c, CURLOPT_CUSTOMREQUEST, call.method.c_str()));
  }
  if (call.method == "POST") {
    return Set(c, CURLOPT_POST, 1L) &&
           Set(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size())) &&
           Set(c, CURLOPT_READFUNCTION, &OnRead) && Set(c, CURLOPT_READDATA, st) &&
           Set(c, CURLOPT_SEEKFUNCTION, &OnSeek) && Set(c, CURLOPT_SEEKDATA, st);
  }
  return call.method == "GET" || Set(c, CURLOPT_CUSTOMREQUEST, call.method.c_str());
}

// Sets one hop's options (PerformHops sets the rest), starting its response
// afresh. The hop gets what is left of the exchange's deadline.
bool ConfigureHop(CURL* c, State* st, const FetchOptions& options, char* error) {
  st->sent = 0;
  st->skipping = false;
  st->status_checked = false;
  st->skipped = 0;
  st->reply->body.clear();
  st->reply->body_truncated = false;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(st->deadline - Clock::now());
  return Set(c, CURLOPT_NOSIGNAL, 1L) && Set(c, CURLOPT_ERRORBUFFER, error) &&
         Set(c, CURLOPT_USERAGENT, kUserAgent) &&
         Set(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<std::int64_t>(left.count(), 1))) &&
         Set(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count())) &&
         Set(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_limit)) &&
         Set(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count())) &&
         Set(c, CURLOPT_HEADERFUNCTION, &OnHeader) && Set(c, CURLOPT_HEADERDATA, st) &&
         Set(c, CURLOPT_WRITEFUNCTION, &OnBody) && Set(c, CURLOPT_WRITEDATA, st) &&
         SetMethod(c, st);
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

std::vector<std::string> HttpResponse::Headers(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : headers) {
    if (k == name) out.push_back(v);
  }
  return out;
}

bool HttpResponse::transient() const {
  if (!refused.ok()) return false;
  if (transport_failed) return transport_transient;
  return IsTransientStatus(status);
}

namespace {

// The time an exchange may take: `timeout`, plus a second for every whole
// kExchangeMinSendRate bytes it sends.
std::chrono::seconds ExchangeBudget(std::chrono::seconds timeout, const HttpRequest& call) {
  return timeout +
         std::chrono::seconds(static_cast<std::int64_t>(call.body.size() / kExchangeMinSendRate));
}

// How the hops ended, when they did not end in an answer: the response's
// transport failure. A body stopped at max_body is an answer.
void SetTransportFailure(const HopResult& hops, const State& st, std::chrono::seconds budget,
                         const char* error, HttpResponse* reply) {
  if (hops.code == CURLE_OK || (hops.code == CURLE_WRITE_ERROR && reply->body_truncated)) return;
  reply->transport_failed = true;
  // libcurl's own clock may run a little apart from ours.
  if (hops.code == CURLE_OPERATION_TIMEDOUT &&
      Clock::now() + std::chrono::milliseconds(10) >= st.deadline) {
    reply->deadline_passed = true;
    reply->error =
        "no complete answer within " + std::to_string(budget.count()) + " s (CARTON_HTTP_TIMEOUT)";
    return;
  }
  if (st.redirect_too_long) {
    reply->error = "the body of a redirect passed the limit of " +
                   std::to_string(kMaxRedirectBodySize) + " bytes";
    return;
  }
  reply->transport_transient = IsTransientCurlError(hops.code);
  reply->error = curl_easy_strerror(hops.code);
  if (error[0] != '\0') reply->error += std::string(" (") + error + ")";
}

HttpResponse Call(CURL* curl, const HttpRequest& call, const HttpAccess& access,
                  const FetchOptions& options, std::chrono::seconds timeout) {
  HttpResponse reply;
  State st;
  st.curl = curl;
  st.call = &call;
  st.reply = &reply;
  const std::chrono::seconds budget = ExchangeBudget(timeout, call);
  st.deadline = Clock::now() + budget;
  std::array<char, CURL_ERROR_SIZE> error{};
  std::vector<std::string> headers = call.headers;
  // No "Expect: 100-continue" round trip before a body: the registry has
  // answered the requests that would refuse it already.
  if (call.method == "PUT" || call.method == "PATCH" || call.method == "POST") {
    headers.push_back("Expect:");
  }

  HopRequest request;
  request.access = &access;
  request.origin_headers = call.origin_headers;
  request.max_redirects = options.max_redirects;
  request.follow_redirects = call.method == "GET" || call.method == "HEAD";
  const HopResult hops = PerformHops(curl, call.url, request, headers, [&](CURL* c) {
    return ConfigureHop(c, &st, options, error.data());
  });
  reply.status = hops.status;
  reply.url = hops.url;
  reply.refused = hops.refused;
  reply.bytes_sent = st.sent;
  SetTransportFailure(hops, st, budget, error.data(), &reply);
  return reply;
}

}  // namespace

struct HttpClient::Impl {
  FetchOptions options;
  HttpAccess access;
  std::chrono::seconds exchange_timeout{};
  mutable std::mutex mu;
  mutable std::vector<CurlEasy> idle;  // connections kept for the next Send
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

Result<std::unique_ptr<HttpClient>> HttpClient::Create(const FetchOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  CARTON_ASSIGN_OR_RETURN(impl->access, ResolveAccess(options));
  CARTON_ASSIGN_OR_RETURN(impl->exchange_timeout, ResolveExchangeTimeout(options));
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

const FetchOptions& HttpClient::options() const { return impl_->options; }
const HttpAccess& HttpClient::access() const { return impl_->access; }
std::chrono::seconds HttpClient::exchange_timeout() const { return impl_->exchange_timeout; }

Result<HttpResponse> HttpClient::Send(const HttpRequest& request) const {
  CurlEasy curl;
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->idle.empty()) {
      curl = std::move(impl_->idle.back());
      impl_->idle.pop_back();
    }
  }
  if (curl == nullptr) {
    CARTON_ASSIGN_OR_RETURN(curl, NewCurlHandle());
  }
  HttpResponse response =
      Call(curl.get(), request, impl_->access, impl_->options, impl_->exchange_timeout);
  std::lock_guard lock(impl_->mu);
  impl_->idle.push_back(std::move(curl));
  return response;
}

std::string EscapeUrlComponent(std::string_view s) {
  // curl_easy_escape needs no handle since libcurl 7.82 (Debian 12: 7.88).
  char* e = curl_easy_escape(nullptr, s.data(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : "";
  curl_free(e);
  return out;
}

}  // namespace carton::net
