#include "transfer.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <utility>

#include "carton/common/atomic_file.h"
#include "hashing_writer.h"
#include "http_hop.h"

namespace carton::links {
namespace {

constexpr char kUserAgent[] = "carton";
constexpr auto kProgressInterval = std::chrono::milliseconds(200);
// libcurl's receive buffer (default 16 KiB): larger chunks mean fewer write
// callbacks, hash updates and buffer copies per GiB.
constexpr long kReceiveBufferSize = 512 << 10;

bool IsSuccess(long status) {
  // 206 would mean a range we never asked for, so not the whole file.
  return status >= 200 && status <= 299 && status != 206;
}

}  // namespace

bool IsTransientStatus(long status) { return status == 408 || status == 429 || status >= 500; }

bool IsTransientCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

namespace {

std::string Mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / (1 << 20));
  return buf;
}

// A one-line progress display on stderr, drawn only on a terminal: bytes so
// far, the total when known, the average rate, and what is being fetched.
class Progress {
 public:
  Progress(const std::string& label, bool wanted)
      : label_(label), enabled_(wanted && ::isatty(2)), start_(std::chrono::steady_clock::now()) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() {
    if (!drawn_) return;
    Draw();  // the final count
    std::fputs("\n", stderr);
  }

  bool enabled() const { return enabled_; }

  void Update(curl_off_t now, curl_off_t total) {
    now_ = now;
    total_ = total;
    const auto t = std::chrono::steady_clock::now();
    if (drawn_ && t - last_ < kProgressInterval) return;
    last_ = t;
    drawn_ = true;
    Draw();
  }

 private:
  void Draw() const {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string line = "\rcarton: fetching " + label_ + ": " + Mib(static_cast<double>(now_));
    if (total_ > 0) line += " of " + Mib(static_cast<double>(total_));
    if (seconds > 0) line += ", " + Mib(static_cast<double>(now_) / seconds) + "/s";
    line += "\x1b[K";  // clear the rest of the previous line
    std::fputs(line.c_str(), stderr);
  }

  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  curl_off_t now_ = 0;
  curl_off_t total_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

int OnProgress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  static_cast<Progress*>(user)->Update(dlnow, dltotal);
  return 0;
}

// Receives the decoded body. Returning less than offered makes libcurl abort
// the transfer with CURLE_WRITE_ERROR; the reason is kept here, or in the
// writer for a failed write.
struct Sink {
  CURL* curl = nullptr;
  HashingWriter* writer = nullptr;
  std::uint64_t cap = 0;
  std::uint64_t received = 0;
  bool status_checked = false;
  bool skipping = false;  // the body of a redirect, which is not the file
  long refused_status = 0;
  bool over_cap = false;
};

std::size_t OnBody(char* data, std::size_t, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  if (!sink->status_checked) {
    sink->status_checked = true;
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (IsRedirectStatus(status)) {
      sink->skipping = true;
    } else if (status != 0 && !IsSuccess(status)) {
      // An error page is not the file; stop before storing any of it.
      sink->refused_status = status;
      return 0;
    }
  }
  if (sink->skipping) return n;
  if (n > sink->cap - sink->received) {
    sink->over_cap = true;
    return 0;
  }
  // The writer hashes on its own thread, overlapping with libcurl receiving
  // and decoding the next bytes on this one.
  if (!sink->writer->Write(ByteView(reinterpret_cast<const std::byte*>(data), n))) return 0;
  sink->received += n;
  return n;
}

std::once_flag global_init_once;
CURLcode global_init_result = CURLE_OK;

template <typename T>
bool Set(CURL* curl, CURLoption option, T value) {
  return curl_easy_setopt(curl, option, value) == CURLE_OK;
}

AttemptResult Fail(Status status, bool transient = false) {
  AttemptResult r;
  r.status = std::move(status);
  r.transient = transient;
  return r;
}

}  // namespace

Result<CurlEasy> NewCurlHandle() {
  std::call_once(global_init_once,
                 [] { global_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (global_init_result != CURLE_OK) {
    return Internal(std::string("cannot initialise libcurl: ") +
                    curl_easy_strerror(global_init_result));
  }
  CurlEasy curl(curl_easy_init());
  if (!curl) return Internal("cannot create a libcurl handle");
  return curl;
}

Result<Transfer> Transfer::Create() {
  CARTON_ASSIGN_OR_RETURN(CurlEasy curl, NewCurlHandle());
  return Transfer(std::move(curl));
}

AttemptResult Transfer::Attempt(const std::string& url, const manifest::Digest* expected,
                                std::uint64_t expected_size_or_0, const std::string& dest_path,
                                const FetchOptions& options, const HttpAccess& access) {
  auto file = AtomicFile::Create(dest_path, {.buffer_size = HashingWriter::kWriteSize});
  if (!file.ok()) {
    AttemptResult r = Fail(file.status());
    r.fatal = true;
    return r;
  }
  CURL* curl = curl_.get();

  HashingWriter writer(&*file, options.on_written);
  Sink sink;
  sink.curl = curl;
  sink.writer = &writer;
  sink.cap = expected_size_or_0 != 0 ? expected_size_or_0 : options.max_decoded_size;
  Progress progress(options.progress_label.empty() ? url : options.progress_label,
                    options.show_progress);
  error_buffer_.fill('\0');

  auto configure = [&](CURL* c) {
    // Each hop of a redirect starts a response of its own.
    sink.status_checked = false;
    sink.skipping = false;
    return Set(c, CURLOPT_NOSIGNAL, 1L) && Set(c, CURLOPT_ERRORBUFFER, error_buffer_.data()) &&
           // "" asks for every encoding this libcurl decodes (gzip, deflate, br, zstd).
           Set(c, CURLOPT_ACCEPT_ENCODING, "") && Set(c, CURLOPT_USERAGENT, kUserAgent) &&
           Set(c, CURLOPT_BUFFERSIZE, kReceiveBufferSize) &&
           Set(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count())) &&
           Set(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_limit)) &&
           Set(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count())) &&
           Set(c, CURLOPT_WRITEFUNCTION, &OnBody) && Set(c, CURLOPT_WRITEDATA, &sink) &&
           (!progress.enabled() ||
            (Set(c, CURLOPT_XFERINFOFUNCTION, &OnProgress) &&
             Set(c, CURLOPT_XFERINFODATA, &progress) && Set(c, CURLOPT_NOPROGRESS, 0L)));
  };
  HopRequest request;
  request.access = &access;
  request.origin_headers = options.headers;
  request.max_redirects = options.max_redirects;
  request.allow_file = options.allow_file_links;
  const HopResult hops = PerformHops(curl, url, request, {}, configure);
  if (hops.code == CURLE_FAILED_INIT && hops.refused.ok()) {
    return Fail(Internal(url + ": libcurl rejected an option"));
  }
  const CURLcode code = hops.code;
  const long status = hops.status;

  // Whatever ended the transfer, a failed write of bytes accepted before it
  // is reported first, as when it stopped the transfer.
  Result<manifest::Digest> got = writer.Finish();
  if (!got.ok()) {
    AttemptResult r = Fail(got.status().WithContext(url));
    r.fatal = true;
    return r;
  }
  if (sink.over_cap) {
    return Fail(Corrupt(
        url + ": body exceeds " +
        (expected_size_or_0 != 0
             ? "the expected " + std::to_string(expected_size_or_0) + " bytes"
             : "the limit of " + std::to_string(options.max_decoded_size) + " decoded bytes")));
  }
  if (!hops.refused.ok()) return Fail(hops.refused);
  if (sink.refused_status != 0 || (code == CURLE_OK && status != 0 && !IsSuccess(status))) {
    const long shown = sink.refused_status != 0 ? sink.refused_status : status;
    AttemptResult r = Fail(NetworkError(url + ": http status " + std::to_string(shown)),
                           IsTransientStatus(shown));
    curl_off_t retry_after = 0;
    if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
        retry_after > 0) {
      r.retry_after = std::chrono::seconds(retry_after);
    }
    return r;
  }
  if (code != CURLE_OK) {
    std::string message = url + ": " + curl_easy_strerror(code);
    if (error_buffer_[0] != '\0') message += std::string(" (") + error_buffer_.data() + ")";
    return Fail(NetworkError(std::move(message)), IsTransientCurlError(code));
  }

  if (expected_size_or_0 != 0 && sink.received != expected_size_or_0) {
    return Fail(Corrupt(url + ": got " + std::to_string(sink.received) + " bytes, expected " +
                        std::to_string(expected_size_or_0)));
  }
  if (expected != nullptr && *got != *expected) {
    return Fail(Corrupt(url + ": sha256 is " + manifest::ToHex(*got) + ", expected " +
                        manifest::ToHex(*expected) + " (" + std::to_string(sink.received) +
                        " bytes received)"));
  }
  if (Status s = file->Commit(); !s.ok()) {
    AttemptResult r = Fail(std::move(s));
    r.fatal = true;
    return r;
  }
  return AttemptResult{};
}

}  // namespace carton::links
