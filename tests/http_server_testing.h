// A real HTTP server on 127.0.0.1 for the fetch tests: a small Python
// http.server script, started by the constructor and killed by the
// destructor. It serves one payload in many ways (see the routes in
// http_server_testing.cc) and logs every request path.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "carton/common/bytes.h"
#include "carton/manifest/sha256.h"
#include "testing.h"

namespace carton::testing {

// About 256 KiB of compressible text.
const std::string& Payload();
const manifest::Digest& PayloadDigest();

class TestServer {
 public:
  // Throws std::runtime_error if the server does not come up within a few
  // seconds.
  TestServer();
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // "http://127.0.0.1:<port><path>"
  std::string Url(std::string_view path) const;
  // How many requests for exactly `path` the server has received.
  int Requests(std::string_view path) const;
  // The payload as a file on disk.
  std::string payload_path() const { return dir_.file("payload"); }

 private:
  carton::testing::TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A 127.0.0.1 port with nothing listening on it.
int ClosedPort();

}  // namespace carton::testing
