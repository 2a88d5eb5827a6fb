// Fetching one file, named by its sha256, from a list of URLs.
//
// FetchToFile tries each URL in order, retrying transient failures with
// exponential backoff, and falls back to the next URL on any failure,
// including a body whose sha256 does not match. The body is decoded (every
// Content-Encoding libcurl knows: gzip, deflate, br, zstd), streamed into a
// temporary file beside the destination while it is hashed, and renamed into
// place only when its size and sha256 match. A completed transfer proves
// nothing by itself: a body cut off inside its encoding still arrives
// "successfully", and only the hash catches it. The destination therefore
// either holds the right bytes or is left untouched; no partial file remains.
// Guarantees and limits are listed in net/FORMAT.md "Fetching".
//
// Thread-safety: FetchToFile may run on many threads at once (each call owns
// its own connection). Each transfer hashes on one extra thread of its own,
// with at most 4 MiB of buffers (8 MiB for FetchToStream). Progress is
// drawn on stderr only when it is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/net/http_access.h"

namespace carton::net {

inline constexpr int kDefaultMaxRedirects = 5;
// FetchOptions::keep_partial: what arrived of an interrupted download is kept
// in `<dest><kPartialSuffix>`, its validator in `<dest><kValidatorSuffix>`.
inline constexpr char kPartialSuffix[] = ".partial";
inline constexpr char kValidatorSuffix[] = ".partial-validator";
// Decoded bytes accepted from one response when the expected size is not
// known: a cap against decompression bombs.
inline constexpr std::uint64_t kDefaultMaxDecodedSize = std::uint64_t{64} << 30;
// FetchOptions::exchange_timeout when neither the caller nor
// $CARTON_HTTP_TIMEOUT sets it.
inline constexpr std::chrono::seconds kDefaultExchangeTimeout{120};
// An exchange that sends a body gets one more second per this many bytes
// of it (the slowest upload it waits for: a 64 MiB chunk gets 64 s more).
inline constexpr std::uint64_t kExchangeMinSendRate = 1 << 20;
// The most seconds $CARTON_HTTP_TIMEOUT may give.
inline constexpr std::int64_t kMaxExchangeTimeoutSeconds = 1'000'000;

struct FetchOptions {
  // Time allowed to connect to one server.
  std::chrono::milliseconds connect_timeout{15'000};
  // An attempt is abandoned when it receives fewer than `low_speed_limit`
  // bytes per second for `low_speed_time` (a stalled server).
  std::uint32_t low_speed_limit = 1024;
  std::chrono::seconds low_speed_time{30};
  // A small exchange (HttpClient::Send: a registry's manifests, tokens,
  // HEADs, upload answers) must be answered completely within this time,
  // plus one second per kExchangeMinSendRate bytes of the body it sends;
  // past it the exchange is abandoned ("no complete answer within N s") and
  // not retried. Downloads (FetchToFile, FetchToStream, DownloadToFile,
  // HttpRangeSource) have no such deadline, only the stall rule above.
  // nullopt: ResolveExchangeTimeout ($CARTON_HTTP_TIMEOUT, else
  // kDefaultExchangeTimeout), read when an HttpClient is created.
  std::optional<std::chrono::seconds> exchange_timeout;
  // Attempts per URL (>= 1). Only transient failures are retried: connection
  // errors, timeouts, bodies cut short, HTTP 408, 429 and 5xx.
  int attempts_per_url = 4;
  // Wait before the second attempt; doubles each time, up to max_backoff.
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{16'000};
  // A Retry-After header (on 429 or 503) replaces the backoff, capped here.
  std::chrono::seconds max_retry_after{60};
  // Redirects followed per attempt (>= 0); only to http and https URLs.
  // carton follows them itself, checking each target against `access`
  // before connecting to it.
  int max_redirects = kDefaultMaxRedirects;
  // Where requests may go and the per-host headers and netrc credentials
  // they carry (http_access.h); nullopt: HttpAccessFromEnvironment(), read
  // at each call.
  std::optional<HttpAccess> access;
  // Headers sent to the scheme, host and port of each URL tried (a
  // registry's Authorization, say), never after a redirect to another host.
  std::vector<std::string> headers;
  // Most decoded bytes accepted; the transfer is aborted past it. When the
  // expected size is known, that size is the cap.
  std::uint64_t max_decoded_size = kDefaultMaxDecodedSize;
  // file:// URLs are refused unless this is set (a LINKS file from an
  // untrusted carton must not read local files).
  bool allow_file_links = false;
  // Draw a progress line on stderr (only when stderr is a terminal): bytes,
  // rate, and `progress_label` (the URL when empty).
  bool show_progress = true;
  std::string progress_label;
  // If set, called with the body's bytes received so far and its total (0
  // when unknown), and no line is drawn whatever show_progress says: the
  // caller reports progress (set it to a function that does nothing for
  // silence).
  ProgressFn progress;
  // Keep what arrived of a failed or interrupted transfer in
  // `dest_path`.partial (with the response's ETag or Last-Modified in
  // `dest_path`.partial-validator) instead of removing it, and resume from
  // it with "Range: bytes=N-" (and If-Range) on the next attempt or call.
  // A 206 answer must continue exactly there (its Content-Range, and no
  // Content-Encoding); a 200 starts over; the sha256 (and size) still cover
  // the whole file, and a mismatch removes the partial file. Without an
  // expected sha256 (DownloadToFile) only a partial file with a validator
  // is resumed. REQUIRES: the caller keeps other fetches of `dest_path` out
  // (BlobCache::Fetch holds the blob's lock).
  bool keep_partial = false;
  // Called on the transfer's thread each time more of the body has reached
  // the file being written (the temporary file beside the destination, or
  // with keep_partial the partial file): that file's descriptor (valid
  // during the call only: dup(2) it to read on) and how many bytes of the
  // file it holds (with a resumed download, the kept bytes too). A retry
  // that starts over shows as another descriptor, or as fewer bytes than
  // before. The bytes are not verified until FetchToFile returns OK; after
  // that the file is complete. Must not throw.
  std::function<void(int fd, std::uint64_t length)> on_written;
};

// The exchange deadline `options` asks for: its exchange_timeout when set
// (it must be positive), else $CARTON_HTTP_TIMEOUT when set and not empty
// (whole seconds, 1 to kMaxExchangeTimeoutSeconds), else
// kDefaultExchangeTimeout. Errors: kInvalidArgument naming the option or the
// variable and the rule.
Result<std::chrono::seconds> ResolveExchangeTimeout(const FetchOptions& options);

// Fetches the file whose sha256 is `expected` into `dest_path`.
// `expected_size_or_0` is its size in bytes, or 0 when unknown.
// On success `dest_path` holds exactly those bytes (replaced atomically).
// Errors, after every URL failed (one message lists each URL's failure):
//   kInvalidArgument  no URLs, bad options, or only refused URLs (file://
//                     without allow_file_links, other schemes, hosts or
//                     redirect targets that `access` refuses).
//   kNetworkError     transfers failed (connection, timeout, HTTP status
//                     >= 400 or otherwise not 2xx, refused redirect).
//   kCorrupt          bodies arrived but had the wrong size or sha256, or
//                     exceeded the size cap.
//   kIoError          the temporary file beside `dest_path` could not be
//                     created or written (returned at once).
// When URLs failed in different ways the code is kNetworkError.
Status FetchToFile(const std::vector<std::string>& urls, const manifest::Digest& expected,
                   std::uint64_t expected_size_or_0, const std::string& dest_path,
                   const FetchOptions& options = {});

// Where FetchToStream hands a download's bytes, in order, as they arrive.
// Called on the transfer's thread; must not throw.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // The body starts (again) from its first byte: forget what earlier
  // attempts delivered. An error ends the fetch at once (the sink cannot
  // take the bytes again, say because they were used already).
  virtual Status Restart() = 0;
  // The next bytes of the body. They are not verified until FetchToStream
  // returns OK. An error ends the fetch at once.
  virtual Status Append(ByteView bytes) = 0;
  // The same, without a copy: `owner` keeps `bytes` alive and unchanged
  // for as long as the sink holds a copy of it, on any thread. The
  // transfer reuses that memory only once every copy is dropped, and waits
  // for it when all of its buffers are held (32 of 256 KiB: a sink that
  // keeps all 32 stops the transfer for good). The default calls Append.
  virtual Status AppendShared(std::shared_ptr<const std::byte> owner, ByteView bytes) {
    (void)owner;
    return Append(bytes);
  }
};

// As FetchToFile, but the bytes go to `sink` instead of a file: hashed as
// they stream, with the same retries, except that every attempt starts
// from the first byte (no Range: the sink holds no file to resume from),
// announced by sink.Restart(). OK only when exactly `size` bytes with
// sha256 `expected` arrived; until then the sink must treat what it got as
// unverified. keep_partial and on_written are ignored. Errors: as
// FetchToFile; the sink's error, as it returned it.
Status FetchToStream(const std::vector<std::string>& urls, const manifest::Digest& expected,
                     std::uint64_t size, StreamSink& sink, const FetchOptions& options = {});

// Downloads `url` into `dest_path` as it is, with the retries and limits of
// FetchToFile (max_decoded_size caps the body) but no hash to check: for
// whole files, such as a carton given by URL, whose contents are checked
// afterwards. The same all-or-nothing rule holds. Errors: as FetchToFile.
Status DownloadToFile(const std::string& url, const std::string& dest_path,
                      const FetchOptions& options = {});

}  // namespace carton::net
