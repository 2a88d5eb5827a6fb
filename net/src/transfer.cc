#include "transfer.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/quote.h"
#include "carton/net/url.h"
#include "download_sink.h"
#include "hashing_writer.h"
#include "http_hop.h"
#include "partial_file.h"

namespace carton::net {
namespace {

constexpr char kUserAgent[] = "carton";
// libcurl's receive buffer (default 16 KiB): larger chunks mean fewer write
// callbacks, hash updates and buffer copies per GiB.
constexpr long kReceiveBufferSize = 512 << 10;

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

// A failure of the temporary or partial file: no other URL can do better.
AttemptResult LocalFailure(Status status) {
  AttemptResult r = Fail(std::move(status));
  r.fatal = true;
  return r;
}

// One attempt's state, from opening the destination to renaming it into
// place. libcurl's callbacks point into it, so it neither moves nor copies.
class AttemptState {
 public:
  AttemptState(const AttemptRequest& request, CURL* curl,
               std::array<char, CURL_ERROR_SIZE>* error_buffer)
      : request_(request),
        options_(*request.options),
        curl_(curl),
        error_buffer_(error_buffer),
        progress_(options_, request.url) {}
  AttemptState(const AttemptState&) = delete;
  AttemptState& operator=(const AttemptState&) = delete;

  // Opens where the bytes go and the writer that hashes them on the way.
  // Errors: the temporary or partial file's.
  Status Open();
  // Makes the request, following its redirects.
  HopResult Perform();
  // Reports how the transfer ended, and on success renames the file into
  // place.
  AttemptResult Finish(const HopResult& hops);

 private:
  // Opens the temporary file, or the partial file, or nothing for a stream.
  Status OpenDestination();
  // A writer into the stream, the partial file or the temporary file.
  void StartWriter();
  Status Written(Status s);
  std::vector<std::string> RangeHeaders() const;
  // Sets one hop's options (PerformHops sets the rest).
  bool Configure(CURL* c);
  // The answer continues the partial file.
  bool Resumed(long status) const { return status == 206 && sink_.resume_from > 0; }
  AttemptResult OverCap();
  std::optional<AttemptResult> CheckTransfer(const HopResult& hops);
  AttemptResult StartOver();
  AttemptResult RefusedStatus(long status);
  std::optional<AttemptResult> Verify(const manifest::Digest& got, long status);

  const AttemptRequest& request_;
  const FetchOptions& options_;
  CURL* curl_;
  std::array<char, CURL_ERROR_SIZE>* error_buffer_;
  // The order matters: members are destroyed in reverse, so the writer
  // stops before an empty partial file is dropped, and the files close last.
  //
  // The bytes go to a temporary file that disappears on failure, or, with
  // keep_partial, to a partial file that stays to be resumed, or to the
  // stream.
  std::optional<AtomicFile> file_;
  std::optional<PartialFile> partial_;
  // A partial file that received nothing is not worth keeping (an error
  // status, a refused connection): removed whatever the outcome.
  struct DropIfEmpty {
    std::optional<PartialFile>* partial;
    ~DropIfEmpty() {
      if (*partial && (*partial)->size() == 0) (*partial)->Discard();
    }
  } drop_if_empty_{&partial_};
  std::optional<HashingWriter> writer_;
  ResponseHeaders headers_;
  DownloadProgress progress_;
  DownloadSink sink_;
};

Status AttemptState::Open() {
  CARTON_RETURN_IF_ERROR(OpenDestination());
  StartWriter();
  sink_.curl = curl_;
  sink_.writer = &*writer_;
  sink_.headers = &headers_;
  sink_.progress = &progress_;
  sink_.cap =
      request_.expected_size_or_0 != 0 ? request_.expected_size_or_0 : options_.max_decoded_size;
  sink_.expected_size_or_0 = request_.expected_size_or_0;
  sink_.partial = partial_ ? &*partial_ : nullptr;
  sink_.resume_from = partial_ ? partial_->size() : 0;
  sink_.stream = request_.stream;
  return Status::Ok();
}

Status AttemptState::OpenDestination() {
  if (request_.stream != nullptr) {
    // Nothing to open.
  } else if (options_.keep_partial) {
    CARTON_ASSIGN_OR_RETURN(PartialFile p, PartialFile::Open(request_.dest_path));
    partial_.emplace(std::move(p));
    // Without a sha256 to check, only a validator proves the server still
    // has the same file.
    if (partial_->size() > 0 && request_.expected == nullptr && partial_->validator().empty()) {
      CARTON_RETURN_IF_ERROR(partial_->Restart());
    }
  } else {
    CARTON_ASSIGN_OR_RETURN(
        AtomicFile f,
        AtomicFile::Create(request_.dest_path, {.buffer_size = HashingWriter::kWriteSize}));
    file_.emplace(std::move(f));
  }
  return Status::Ok();
}

void AttemptState::StartWriter() {
  if (request_.stream != nullptr) {
    writer_.emplace(
        HashingWriter::SharingSink([this](std::shared_ptr<const std::byte> owner, ByteView b) {
          return request_.stream->AppendShared(std::move(owner), b);
        }));
  } else if (partial_) {
    writer_.emplace([this](ByteView b) { return Written(partial_->Append(b)); });
  } else {
    writer_.emplace([this](ByteView b) { return Written(file_->Write(b)); });
  }
}

// FetchOptions::on_written after each piece reaches the file.
Status AttemptState::Written(Status s) {
  if (s.ok() && options_.on_written) {
    if (partial_) {
      options_.on_written(partial_->fd(), partial_->size());
    } else {
      options_.on_written(file_->fd(), file_->size_in_file());
    }
  }
  return s;
}

// Range and If-Range, when a partial file is resumed.
std::vector<std::string> AttemptState::RangeHeaders() const {
  std::vector<std::string> range_headers;
  if (sink_.resume_from > 0) {
    range_headers.push_back("Range: bytes=" + std::to_string(sink_.resume_from) + "-");
    if (!partial_->validator().empty()) {
      range_headers.push_back("If-Range: " + partial_->validator());
    }
  }
  return range_headers;
}

HopResult AttemptState::Perform() {
  const std::vector<std::string> range_headers = RangeHeaders();
  error_buffer_->fill('\0');
  HopRequest request;
  request.access = request_.access;
  request.origin_headers = options_.headers;
  request.max_redirects = options_.max_redirects;
  request.allow_file = options_.allow_file_links;
  return PerformHops(curl_, request_.url, request, range_headers,
                     [this](CURL* c) { return Configure(c); });
}

bool AttemptState::Configure(CURL* c) {
  // Each hop of a redirect starts a response of its own.
  sink_.status_checked = false;
  sink_.skipping = false;
  sink_.skipped = 0;
  return Set(c, CURLOPT_NOSIGNAL, 1L) && Set(c, CURLOPT_ERRORBUFFER, error_buffer_->data()) &&
         // "" asks for every encoding this libcurl decodes (gzip, deflate, br, zstd). A
         // range continues the file's own bytes, so it asks for them unencoded.
         Set(c, CURLOPT_ACCEPT_ENCODING, sink_.resume_from > 0 ? "identity" : "") &&
         Set(c, CURLOPT_USERAGENT, kUserAgent) && Set(c, CURLOPT_BUFFERSIZE, kReceiveBufferSize) &&
         Set(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count())) &&
         Set(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options_.low_speed_limit)) &&
         Set(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.low_speed_time.count())) &&
         Set(c, CURLOPT_WRITEFUNCTION, &OnDownloadBody) && Set(c, CURLOPT_WRITEDATA, &sink_) &&
         Set(c, CURLOPT_HEADERFUNCTION, &OnDownloadHeader) &&
         Set(c, CURLOPT_HEADERDATA, &headers_) &&
         (!progress_.enabled() ||
          (Set(c, CURLOPT_XFERINFOFUNCTION, &OnDownloadProgress) &&
           Set(c, CURLOPT_XFERINFODATA, &progress_) && Set(c, CURLOPT_NOPROGRESS, 0L)));
}

AttemptResult AttemptState::Finish(const HopResult& hops) {
  const std::string& url = request_.url;
  // Whatever ended the transfer, a failed write of bytes accepted before it
  // is reported first, as when it stopped the transfer.
  Result<manifest::Digest> got = writer_->Finish();
  if (!got.ok()) return LocalFailure(got.status().WithContext(url));
  if (!sink_.local_error.ok()) return LocalFailure(sink_.local_error);
  if (sink_.over_cap) return OverCap();
  if (sink_.redirect_too_long) {
    return Fail(NetworkError(url + ": the body of a redirect passed the limit of " +
                             std::to_string(kMaxRedirectBodySize) + " bytes"));
  }
  if (!hops.refused.ok()) return Fail(hops.refused);
  if (std::optional<AttemptResult> failed = CheckTransfer(hops)) return std::move(*failed);
  if (std::optional<AttemptResult> wrong = Verify(*got, hops.status)) return std::move(*wrong);
  if (request_.stream == nullptr) {
    if (Status s = partial_ ? partial_->Commit() : file_->Commit(); !s.ok()) {
      return LocalFailure(std::move(s));
    }
  }
  return AttemptResult{};
}

// The body outgrew the expected size, or max_decoded_size.
AttemptResult AttemptState::OverCap() {
  const std::uint64_t expected_size_or_0 = request_.expected_size_or_0;
  if (partial_) partial_->Discard();
  return Fail(Corrupt(
      request_.url + ": body exceeds " +
      (expected_size_or_0 != 0
           ? "the expected " + std::to_string(expected_size_or_0) + " bytes"
           : "the limit of " + std::to_string(options_.max_decoded_size) + " decoded bytes")));
}

// How the server and libcurl ended the transfer: a failure, or nothing when
// the body arrived.
std::optional<AttemptResult> AttemptState::CheckTransfer(const HopResult& hops) {
  const CURLcode code = hops.code;
  const long status = hops.status;
  if (!sink_.bad_range.empty() || (status == 416 && sink_.resume_from > 0)) {
    return StartOver();
  }
  if (sink_.refused_status != 0 ||
      (code == CURLE_OK && status != 0 && !IsWholeFileStatus(status) && !Resumed(status))) {
    return RefusedStatus(status);
  }
  if (code != CURLE_OK) {
    // A partial file keeps what arrived, for the next attempt to resume.
    std::string message = request_.url + ": " + curl_easy_strerror(code);
    if ((*error_buffer_)[0] != '\0') {
      message += std::string(" (") + error_buffer_->data() + ")";
    }
    return Fail(NetworkError(std::move(message)), IsTransientCurlError(code));
  }
  if (partial_ && !sink_.status_checked && partial_->size() > 0) {
    // An empty body: nothing replaced what was kept from before.
    if (Status s = partial_->Restart(); !s.ok()) return LocalFailure(std::move(s));
  }
  return std::nullopt;
}

// The kept bytes cannot be continued from this server: the next attempt
// starts over.
AttemptResult AttemptState::StartOver() {
  if (Status s = partial_->Restart(); !s.ok()) return LocalFailure(std::move(s));
  const std::string why = !sink_.bad_range.empty()
                              ? sink_.bad_range
                              : "cannot serve bytes " + std::to_string(sink_.resume_from) + "-";
  return Fail(NetworkError(request_.url + ": " + why + "; starting over"), /*transient=*/true);
}

// An answer that is not the file, with the server's Retry-After.
AttemptResult AttemptState::RefusedStatus(long status) {
  const long shown = sink_.refused_status != 0 ? sink_.refused_status : status;
  AttemptResult r = Fail(NetworkError(request_.url + ": http status " + std::to_string(shown)),
                         IsTransientStatus(shown));
  curl_off_t retry_after = 0;
  if (curl_easy_getinfo(curl_, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0) {
    r.retry_after = std::chrono::seconds(retry_after);
  }
  return r;
}

// The size and sha256 of what arrived, when they are not the expected
// ones.
std::optional<AttemptResult> AttemptState::Verify(const manifest::Digest& got, long status) {
  const std::uint64_t expected_size_or_0 = request_.expected_size_or_0;
  if (expected_size_or_0 != 0 && sink_.received != expected_size_or_0) {
    if (partial_) partial_->Discard();
    return Fail(Corrupt(request_.url + ": got " + std::to_string(sink_.received) +
                        " bytes, expected " + std::to_string(expected_size_or_0)));
  }
  const manifest::Digest* expected = request_.expected;
  if (expected != nullptr && got != *expected) {
    if (partial_) partial_->Discard();
    return Fail(Corrupt(request_.url + ": sha256 is " + manifest::ToHex(got) + ", expected " +
                        manifest::ToHex(*expected) + " (" + std::to_string(sink_.received) +
                        " bytes received" + (Resumed(status) ? ", resumed" : "") + ")"));
  }
  return std::nullopt;
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

AttemptResult Transfer::Attempt(const AttemptRequest& request) {
  AttemptState state(request, curl_.get(), &error_buffer_);
  if (Status s = state.Open(); !s.ok()) return LocalFailure(std::move(s));
  const HopResult hops = state.Perform();
  if (hops.code == CURLE_FAILED_INIT && hops.refused.ok()) {
    return Fail(Internal(request.url + ": libcurl rejected an option"));
  }
  return state.Finish(hops);
}

}  // namespace carton::net
