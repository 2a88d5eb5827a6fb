#include "download_sink.h"

#include <string_view>
#include <utility>

#include "carton/common/ascii.h"
#include "carton/net/url.h"
#include "http_hop.h"

namespace carton::net {

bool IsWholeFileStatus(long status) {
  // 206 would mean a range we never asked for, so not the whole file.
  return status >= 200 && status <= 299 && status != 206;
}

int OnDownloadProgress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t) {
  static_cast<DownloadProgress*>(user)->Update(dlnow, dltotal);
  return 0;
}

std::size_t OnDownloadHeader(char* data, std::size_t, std::size_t n, void* user) {
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

namespace {

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

// The first bytes of the file's response: decides what they continue.
bool StartBody(DownloadSink* sink, long status) {
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
  if (!IsWholeFileStatus(status)) {
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

}  // namespace

std::size_t OnDownloadBody(char* data, std::size_t, std::size_t n, void* user) {
  auto* sink = static_cast<DownloadSink*>(user);
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
  if (sink->skipping) {
    sink->skipped += n;
    sink->redirect_too_long = sink->skipped > kMaxRedirectBodySize;
    return sink->redirect_too_long ? 0 : n;
  }
  // Past the cap the transfer stops at once: no byte more is read.
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

}  // namespace carton::net
