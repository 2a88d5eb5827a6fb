#include "transfer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "carton/common/ascii.h"
#include "carton/common/atomic_file.h"
#include "carton/common/quote.h"
#include "carton/net/url.h"
#include "hashing_writer.h"
#include "http_hop.h"
#include "partial_file.h"

namespace carton::net {
namespace {

constexpr char kUserAgent[] = "carton";
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

// Where a transfer's progress goes: the caller's callback, or a line on
// stderr (only when it is a terminal).
class Progress {
 public:
  Progress(const FetchOptions& options, const std::string& url)
      : callback_(options.progress),
        line_(callback_
                  ? std::string()
                  : "fetching " + (options.progress_label.empty() ? url : options.progress_label),
              !callback_ && options.show_progress) {}

  bool enabled() const { return callback_ || line_.enabled(); }

  // Bytes of the file already on disk when the transfer resumed: libcurl
  // counts the response's body only.
  void set_base(std::uint64_t base) { base_ = base; }

  void Update(curl_off_t now, curl_off_t total) {
    const auto done = base_ + static_cast<std::uint64_t>(std::max<curl_off_t>(now, 0));
    const auto all = total > 0 ? base_ + static_cast<std::uint64_t>(total) : 0;
    if (callback_) {
      callback_(done, all);
    } else {
      line_.Update(done, all);
    }
  }

 private:
  ProgressFn callback_;
  ProgressLine line_;
  std::uint64_t base_ = 0;
};

int OnProgress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  static_cast<Progress*>(user)->Update(dlnow, dltotal);
  return 0;
}

// The headers of the last response (a redirect's are replaced by the next
// hop's).
struct ResponseHeaders {
  std::string etag;
  std::string last_modified;
  std::string content_range;
  std::string content_encoding;
};

std::size_t OnHeader(char* data, std::size_t, std::size_t n, void* user) {
  auto* h = static_cast<ResponseHeaders*>(user);
  const std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    *h = ResponseHeaders{};
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  const std::string name = AsciiLower(TrimSpace(line.substr(0, colon)));
  const std::string value(TrimSpace(line.substr(colon + 1)));
  if (name == "etag") {
    h->etag = value;
  } else if (name == "last-modified") {
    h->last_modified = value;
  } else if (name == "content-range") {
    h->content_range = value;
  } else if (name == "content-encoding") {
    h->content_encoding = AsciiLower(value);
  }
  return n;
}

// True when `value` is "bytes FIRST-LAST/TOTAL" with FIRST == `first`,
// LAST == TOTAL - 1, and TOTAL == `expected_size_or_0` when that is known:
// the rest of the file, from where the partial file ends.
bool IsRestOfFile(std::string_view value, std::uint64_t first, std::uint64_t expected_size_or_0) {
  if (value.rfind("bytes ", 0) != 0) return false;
  value.remove_prefix(6);
  std::uint64_t a = 0, b = 0, total = 0;
  auto number = [&](std::uint64_t* out, char end) {
    std::size_t i = 0;
    *out = 0;
    for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
      if (*out > (~std::uint64_t{0} - 9) / 10) return false;
      *out = *out * 10 + static_cast<std::uint64_t>(value[i] - '0');
    }
    if (i == 0) return false;
    value.remove_prefix(i);
    if (end == '\0') return value.empty();
    if (value.empty() || value.front() != end) return false;
    value.remove_prefix(1);
    return true;
  };
  if (!number(&a, '-') || !number(&b, '/') || !number(&total, '\0')) return false;
  return a == first && total > 0 && b == total - 1 &&
         (expected_size_or_0 == 0 || total == expected_size_or_0);
}

// Receives the decoded body. Returning less than offered makes libcurl abort
// the transfer with CURLE_WRITE_ERROR; the reason is kept here, or in the
// writer for a failed write.
struct Sink {
  CURL* curl = nullptr;
  HashingWriter* writer = nullptr;
  const ResponseHeaders* headers = nullptr;
  Progress* progress = nullptr;
  std::uint64_t cap = 0;
  std::uint64_t received = 0;
  std::uint64_t expected_size_or_0 = 0;
  // Resuming: the partial file, and the offset asked for (0: from the
  // start).
  PartialFile* partial = nullptr;
  std::uint64_t resume_from = 0;
  // Streaming: where the bytes go (told when the body starts).
  StreamSink* stream = nullptr;
  bool status_checked = false;
  bool skipping = false;  // the body of a redirect, which is not the file
  long refused_status = 0;
  bool over_cap = false;
  std::string bad_range;  // why a 206 answer does not continue the file
  Status local_error;     // the partial file could not be read or reset
};

// The first bytes of the file's response: decides what they continue.
bool StartBody(Sink* sink, long status) {
  if (status == 206 && sink->resume_from > 0) {
    const ResponseHeaders& h = *sink->headers;
    if (!IsRestOfFile(h.content_range, sink->resume_from, sink->expected_size_or_0)) {
      sink->bad_range = "answered a request for bytes " + std::to_string(sink->resume_from) +
                        "- with Content-Range " + QuoteUrl(h.content_range);
      return false;
    }
    if (!h.content_encoding.empty() && h.content_encoding != "identity") {
      sink->bad_range = "answered a range request with Content-Encoding " + h.content_encoding;
      return false;
    }
    // The sha256 covers the whole file: the bytes kept from before first.
    Status s = sink->partial->ReadPrefix([&](ByteView b) { sink->writer->Prehash(b); });
    if (!s.ok()) {
      sink->local_error = std::move(s);
      return false;
    }
    sink->received = sink->resume_from;
    sink->progress->set_base(sink->resume_from);
    return true;
  }
  if (!IsSuccess(status)) {
    // An error page is not the file; stop before storing any of it.
    sink->refused_status = status;
    return false;
  }
  if (sink->stream != nullptr) {
    Status s = sink->stream->Restart();
    if (!s.ok()) {
      sink->local_error = std::move(s);
      return false;
    }
  }
  if (sink->partial != nullptr) {
    // The whole file (the server ignored the range, or none was asked
    // for): start over, remembering what identifies this version.
    const ResponseHeaders& h = *sink->headers;
    Status s = sink->partial->size() > 0 ? sink->partial->Restart() : Status::Ok();
    if (s.ok() && h.content_encoding.empty()) {
      s = sink->partial->SaveValidator(!h.etag.empty() ? h.etag : h.last_modified);
    }
    if (!s.ok()) {
      sink->local_error = std::move(s);
      return false;
    }
  }
  return true;
}

std::size_t OnBody(char* data, std::size_t, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  if (!sink->status_checked) {
    sink->status_checked = true;
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (IsRedirectStatus(status)) {
      sink->skipping = true;
    } else if (status != 0 && !StartBody(sink, status)) {
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
                                const FetchOptions& options, const HttpAccess& access,
                                StreamSink* stream) {
  auto local_failure = [](Status s) {
    AttemptResult r = Fail(std::move(s));
    r.fatal = true;
    return r;
  };
  // The bytes go to a temporary file that disappears on failure, or, with
  // keep_partial, to a partial file that stays to be resumed, or to the
  // stream.
  std::optional<AtomicFile> file;
  std::optional<PartialFile> partial;
  if (stream != nullptr) {
    // Nothing to open.
  } else if (options.keep_partial) {
    auto p = PartialFile::Open(dest_path);
    if (!p.ok()) return local_failure(p.status());
    partial.emplace(std::move(p).value());
    // Without a sha256 to check, only a validator proves the server still
    // has the same file.
    if (partial->size() > 0 && expected == nullptr && partial->validator().empty()) {
      if (Status s = partial->Restart(); !s.ok()) return local_failure(std::move(s));
    }
  } else {
    auto f = AtomicFile::Create(dest_path, {.buffer_size = HashingWriter::kWriteSize});
    if (!f.ok()) return local_failure(f.status());
    file.emplace(std::move(f).value());
  }
  // A partial file that received nothing is not worth keeping (an error
  // status, a refused connection): removed whatever the outcome.
  struct DropIfEmpty {
    std::optional<PartialFile>* partial;
    ~DropIfEmpty() {
      if (*partial && (*partial)->size() == 0) (*partial)->Discard();
    }
  } drop_if_empty{&partial};
  CURL* curl = curl_.get();

  // FetchOptions::on_written after each piece reaches the file.
  auto written = [&](Status s) {
    if (s.ok() && options.on_written) {
      if (partial) {
        options.on_written(partial->fd(), partial->size());
      } else {
        options.on_written(file->fd(), file->size_in_file());
      }
    }
    return s;
  };
  HashingWriter writer =
      stream != nullptr ? HashingWriter(HashingWriter::SharingSink(
                              [&](std::shared_ptr<const std::byte> owner, ByteView b) {
                                return stream->AppendShared(std::move(owner), b);
                              }))
      : partial         ? HashingWriter([&](ByteView b) { return written(partial->Append(b)); })
                        : HashingWriter([&](ByteView b) { return written(file->Write(b)); });
  ResponseHeaders headers;
  Progress progress(options, url);
  Sink sink;
  sink.curl = curl;
  sink.writer = &writer;
  sink.headers = &headers;
  sink.progress = &progress;
  sink.cap = expected_size_or_0 != 0 ? expected_size_or_0 : options.max_decoded_size;
  sink.expected_size_or_0 = expected_size_or_0;
  sink.partial = partial ? &*partial : nullptr;
  sink.resume_from = partial ? partial->size() : 0;
  sink.stream = stream;
  std::vector<std::string> range_headers;
  if (sink.resume_from > 0) {
    range_headers.push_back("Range: bytes=" + std::to_string(sink.resume_from) + "-");
    if (!partial->validator().empty()) {
      range_headers.push_back("If-Range: " + partial->validator());
    }
  }
  error_buffer_.fill('\0');

  auto configure = [&](CURL* c) {
    // Each hop of a redirect starts a response of its own.
    sink.status_checked = false;
    sink.skipping = false;
    return Set(c, CURLOPT_NOSIGNAL, 1L) && Set(c, CURLOPT_ERRORBUFFER, error_buffer_.data()) &&
           // "" asks for every encoding this libcurl decodes (gzip, deflate, br, zstd). A
           // range continues the file's own bytes, so it asks for them unencoded.
           Set(c, CURLOPT_ACCEPT_ENCODING, sink.resume_from > 0 ? "identity" : "") &&
           Set(c, CURLOPT_USERAGENT, kUserAgent) &&
           Set(c, CURLOPT_BUFFERSIZE, kReceiveBufferSize) &&
           Set(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count())) &&
           Set(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_limit)) &&
           Set(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count())) &&
           Set(c, CURLOPT_WRITEFUNCTION, &OnBody) && Set(c, CURLOPT_WRITEDATA, &sink) &&
           Set(c, CURLOPT_HEADERFUNCTION, &OnHeader) && Set(c, CURLOPT_HEADERDATA, &headers) &&
           (!progress.enabled() ||
            (Set(c, CURLOPT_XFERINFOFUNCTION, &OnProgress) &&
             Set(c, CURLOPT_XFERINFODATA, &progress) && Set(c, CURLOPT_NOPROGRESS, 0L)));
  };
  HopRequest request;
  request.access = &access;
  request.origin_headers = options.headers;
  request.max_redirects = options.max_redirects;
  request.allow_file = options.allow_file_links;
  const HopResult hops = PerformHops(curl, url, request, range_headers, configure);
  if (hops.code == CURLE_FAILED_INIT && hops.refused.ok()) {
    return Fail(Internal(url + ": libcurl rejected an option"));
  }
  const CURLcode code = hops.code;
  const long status = hops.status;

  // Whatever ended the transfer, a failed write of bytes accepted before it
  // is reported first, as when it stopped the transfer.
  Result<manifest::Digest> got = writer.Finish();
  if (!got.ok()) return local_failure(got.status().WithContext(url));
  if (!sink.local_error.ok()) return local_failure(sink.local_error);
  if (sink.over_cap) {
    if (partial) partial->Discard();
    return Fail(Corrupt(
        url + ": body exceeds " +
        (expected_size_or_0 != 0
             ? "the expected " + std::to_string(expected_size_or_0) + " bytes"
             : "the limit of " + std::to_string(options.max_decoded_size) + " decoded bytes")));
  }
  if (!hops.refused.ok()) return Fail(hops.refused);
  if (!sink.bad_range.empty() || (status == 416 && sink.resume_from > 0)) {
    // The kept bytes cannot be continued from this server: the next
    // attempt starts over.
    if (Status s = partial->Restart(); !s.ok()) return local_failure(std::move(s));
    const std::string why = !sink.bad_range.empty()
                                ? sink.bad_range
                                : "cannot serve bytes " + std::to_string(sink.resume_from) + "-";
    return Fail(NetworkError(url + ": " + why + "; starting over"), /*transient=*/true);
  }
  const bool resumed = status == 206 && sink.resume_from > 0;
  if (sink.refused_status != 0 ||
      (code == CURLE_OK && status != 0 && !IsSuccess(status) && !resumed)) {
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
    // A partial file keeps what arrived, for the next attempt to resume.
    std::string message = url + ": " + curl_easy_strerror(code);
    if (error_buffer_[0] != '\0') message += std::string(" (") + error_buffer_.data() + ")";
    return Fail(NetworkError(std::move(message)), IsTransientCurlError(code));
  }
  if (partial && !sink.status_checked && partial->size() > 0) {
    // An empty body: nothing replaced what was kept from before.
    if (Status s = partial->Restart(); !s.ok()) return local_failure(std::move(s));
  }

  if (expected_size_or_0 != 0 && sink.received != expected_size_or_0) {
    if (partial) partial->Discard();
    return Fail(Corrupt(url + ": got " + std::to_string(sink.received) + " bytes, expected " +
                        std::to_string(expected_size_or_0)));
  }
  if (expected != nullptr && *got != *expected) {
    if (partial) partial->Discard();
    return Fail(Corrupt(url + ": sha256 is " + manifest::ToHex(*got) + ", expected " +
                        manifest::ToHex(*expected) + " (" + std::to_string(sink.received) +
                        " bytes received" + (resumed ? ", resumed" : "") + ")"));
  }
  if (stream == nullptr) {
    if (Status s = partial ? partial->Commit() : file->Commit(); !s.ok()) {
      return local_failure(std::move(s));
    }
  }
  return AttemptResult{};
}

}  // namespace carton::net
