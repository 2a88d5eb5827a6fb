// A small HTTP server on a loopback address of our choosing (127.0.0.1,
// 127.0.0.2, ...) that records every request it receives with its headers,
// for the tests of where carton connects and which credentials it sends.
// Routes:
//   /file                 the fetch tests' payload (http_server_testing.h)
//   /redirect?to=URL      302 to URL
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "registry_testing.h"
#include "testing.h"

namespace carton::testing {

class HeaderServer {
 public:
  // Listens on `address` (a 127.0.0.0/8 address). Throws
  // std::runtime_error if it does not come up.
  explicit HeaderServer(const std::string& address);
  HeaderServer(const HeaderServer&) = delete;
  HeaderServer& operator=(const HeaderServer&) = delete;

  // "http://<address>:<port><path>"
  std::string Url(std::string_view path) const;
  // "<address>:<port>"
  std::string host() const;
  // One entry per request received: the path, then each header as
  // "Name: value".
  struct Request {
    std::string path;
    std::vector<std::string> headers;
  };
  std::vector<Request> Requests() const;
  // True when some request carried a header that starts with `prefix`
  // (e.g. "Authorization:").
  bool SawHeader(std::string_view prefix) const;

 private:
  carton::testing::TempDir dir_;
  std::string address_;
  int port_ = 0;
  carton::testing::ChildProcess process_;
};

}  // namespace carton::testing
