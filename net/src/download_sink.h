// What libcurl's callbacks do with the response to one download attempt
// (transfer.cc): they keep its headers, report its progress, and check its
// status (and, for a resumed partial file, its Content-Range) before
// handing the body to a HashingWriter. Private to net/src. The structs
// point at objects the attempt owns, which outlive the transfer; the
// callbacks run on the thread that performs it.
#pragma once

#include <curl/curl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/net/fetch.h"
#include "hashing_writer.h"
#include "partial_file.h"
#include "transfer.h"

namespace carton::net {

// A 2xx status that brings the whole file (not 206).
bool IsWholeFileStatus(long status);

// Where a transfer's progress goes: the caller's callback, or a line on
// stderr (only when it is a terminal).
class DownloadProgress {
 public:
  DownloadProgress(const FetchOptions& options, const std::string& url)
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

// CURLOPT_XFERINFOFUNCTION; `user` is a DownloadProgress.
int OnDownloadProgress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t, curl_off_t);

// The headers of the last response (a redirect's are replaced by the next
// hop's).
struct ResponseHeaders {
  std::string etag;
  std::string last_modified;
  std::string content_range;
  std::string content_encoding;
};

// CURLOPT_HEADERFUNCTION; `user` is a ResponseHeaders.
std::size_t OnDownloadHeader(char* data, std::size_t, std::size_t n, void* user);

// Receives the decoded body. Returning less than offered makes libcurl abort
// the transfer with CURLE_WRITE_ERROR; the reason is kept here, or in the
// writer for a failed write.
struct DownloadSink {
  CURL* curl = nullptr;
  HashingWriter* writer = nullptr;
  const ResponseHeaders* headers = nullptr;
  DownloadProgress* progress = nullptr;
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
  bool skipping = false;           // the body of a redirect, which is not the file
  std::uint64_t skipped = 0;       // bytes of that body
  bool redirect_too_long = false;  // past kMaxRedirectBodySize: stopped
  long refused_status = 0;
  bool over_cap = false;
  std::string bad_range;  // why a 206 answer does not continue the file
  Status local_error;     // the partial file could not be read or reset
};

// CURLOPT_WRITEFUNCTION; `user` is a DownloadSink.
std::size_t OnDownloadBody(char* data, std::size_t, std::size_t n, void* user);

}  // namespace carton::net
