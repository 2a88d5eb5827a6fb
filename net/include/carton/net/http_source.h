// HttpRangeSource: a remote file read in pieces with HTTP range requests,
// for reading a carton's metadata (its tail, central directory and a few
// small entries) without downloading the whole file.
//
// Open() asks for the last `tail_size` bytes (`Range: bytes=-N`), which
// gives the file's size from Content-Range and usually the whole zip
// directory in one request; with `head_size` set, it asks for the first
// bytes instead (`Range: bytes=0-N`), for formats that keep their directory
// at the start (safetensors). Every answer must be `206 Partial Content` with
// a Content-Range that matches the request and the size, and without a
// Content-Encoding; a server that ignores Range (200 with the whole body) is
// detected on the first response, the transfer is cut off, and Open() fails
// with kUnsupported. An ETag or Last-Modified that changes between requests
// means the file changed underneath: kNetworkError.
//
// Reads are served from a small cache of fetched ranges; a miss fetches the
// missing range rounded out to `block_size`. Transient failures are retried
// like FetchToFile's (FetchOptions attempts and backoff). Only http and
// https URLs are read.
//
// Thread-safety: ReadAt() may be called from several threads; requests are
// made one at a time over one connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/net/fetch.h"

namespace carton::net {

struct HttpSourceOptions {
  FetchOptions fetch;
  // Bytes asked for by Open(): the end record, the zip64 records and, for
  // most cartons, the whole central directory.
  std::uint32_t tail_size = 8 << 10;
  // When not 0, Open() asks for the first `head_size` bytes instead of the
  // tail (the answer may be shorter: the whole of a smaller file).
  std::uint32_t head_size = 0;
  // A miss fetches at least this much, aligned to it.
  std::uint32_t block_size = 4 << 10;
  // Most bytes kept in the cache; the oldest ranges are dropped first.
  std::uint64_t max_cached_bytes = 8 << 20;
};

// Counters for tests and diagnostics.
struct HttpSourceStats {
  std::uint64_t requests = 0;        // range requests made (retries included)
  std::uint64_t bytes_received = 0;  // body bytes received
};

class HttpRangeSource final : public RandomAccessSource {
 public:
  // Errors: kInvalidArgument (not an http or https URL), kUnsupported (the
  // server ignores Range), kNetworkError (connection, HTTP status, bad
  // Content-Range), kNotFound (404).
  static Result<std::unique_ptr<HttpRangeSource>> Open(const std::string& url,
                                                       const HttpSourceOptions& options = {});
  ~HttpRangeSource() override;

  std::uint64_t size() const override;
  const std::string& name() const override;
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override;

  HttpSourceStats stats() const;

 private:
  struct Impl;
  explicit HttpRangeSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton::net
