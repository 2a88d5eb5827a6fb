// A real nginx (Debian's nginx-light) on 127.0.0.1 for the LINKS tests,
// run unprivileged in the foreground from a generated config in a temporary
// directory, stopped by the destructor. It serves files from www() with
// Range support, and these locations:
//   /<path>                  www()/<path> (Range supported: 206/416)
//   /norange/<path>          the same, ignoring Range (max_ranges 0: 200)
//   /enc/<e>/<name>          www()/blobs/<name><suffix> sent with
//                            Content-Encoding e, for e = zstd (.zst),
//                            br (.br), gzip (.gz), deflate (.zz)
// Every request is logged; BytesServed() and Requests() read that log.
// nginx writes a request's log line just after sending its response, so
// they first send a request of their own (/.carton-log-sync-<n>, a 404) and
// wait for its line: the lines of every earlier request are then written.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "testing.h"

namespace carton::testing {

class NginxServer {
 public:
  // Throws std::runtime_error if nginx is missing or does not come up.
  NginxServer();
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  // The directory served at "/".
  std::string www() const { return dir_.file("www"); }
  // "http://127.0.0.1:<port><path>"
  std::string Url(std::string_view path) const;
  // Body bytes sent, and requests received, for URIs starting with
  // `prefix`, from the access log.
  std::uint64_t BytesServed(std::string_view prefix) const;
  int Requests(std::string_view prefix) const;

 private:
  // The access log once every request sent before the call is in it,
  // without the lines of these sync requests.
  std::string SyncedLog() const;

  TempDir dir_;
  mutable int syncs_ = 0;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace carton::testing
