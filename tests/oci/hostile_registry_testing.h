// A hostile OCI registry on a loopback address of our choosing (127.0.0.1,
// 127.0.0.2, ...), for the tests of the registry client's limits and of
// where its credentials go. A Python server; each repository misbehaves in
// its own way:
//   GET  /v2/endless/manifests/*      200, a body that never ends
//   GET  /v2/drip/manifests/*         200, a body of 1 MiB sent a byte at a
//                                     time at 2 KiB/s (above the 1 KiB/s
//                                     low-speed rule) for 12 s, then cut
//   GET  /v2/redirect/manifests/*     302 to the "tokened" repository, with a
//                                     body that never ends
//   HEAD /v2/errbody/blobs/*          404
//   POST /v2/errbody/blobs/uploads/   400, a JSON error body that never ends
//   PUT  /v2/slow/manifests/*         reads the body, waits 1.5 s, 201
//   GET  /v2/tokened/manifests/*      401 with `Bearer realm=REALM` until a
//                                     request carries "Bearer good", then a
//                                     small manifest
//   GET  /token                       {"token": "good"}; with require_auth,
//                                     401 to a request without Authorization
//   GET  /endless-token               200, a body that never ends
// A body that "never ends" stops at 512 MiB, so that a client that never
// stops reading still returns. Bodies are counted as they are written, and
// each connection's count is logged when it ends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "registry_testing.h"
#include "testing.h"

namespace carton::testing {

class HostileRegistry {
 public:
  // Listens on `address` (a 127.0.0.0/8 address). `realm` is the Bearer
  // realm the "tokened" repository names ("{self}" stands for this
  // server's own http://ADDRESS:PORT). Throws std::runtime_error if it
  // does not come up.
  explicit HostileRegistry(const std::string& address, const std::string& realm = "{self}/token",
                           bool require_auth = false);
  HostileRegistry(const HostileRegistry&) = delete;
  HostileRegistry& operator=(const HostileRegistry&) = delete;

  // "<address>:<port>"
  std::string host() const;
  // "http://<address>:<port><path>"
  std::string Url(std::string_view path) const;
  // The body bytes route `name` ("endless", "drip", "redirect", "errbody",
  // "endless-token") wrote, summed over its connections; waits up to 10 s
  // for a connection to end. -1 when none ended.
  std::int64_t BytesSent(const std::string& name) const;
  // The Authorization header of each request /token received, in order
  // ("" for a request without one).
  std::vector<std::string> TokenAuthorizations() const;

 private:
  TempDir dir_;
  std::string address_;
  int port_ = 0;
  ChildProcess process_;
};

}  // namespace carton::testing
