// A real OCI registry on 127.0.0.1 for the OCI tests: Debian's
// docker-registry (the CNCF distribution server) started from a config in
// a temporary directory, with its storage there too, and stopped by the
// destructor. Optionally:
//   - htpasswd basic auth (a bcrypt entry from `htpasswd -Bbn`);
//   - the bearer token flow: a token server (Python, tokens signed with a
//     throwaway key through `openssl dgst -sign`) that the registry is
//     configured to trust, so the registry itself verifies every token;
//   - a proxy in front of it that cuts blob downloads off half-way.
// The registry logs every request (method, URI, status) at level info;
// Requests() counts them.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "testing.h"

namespace carton::testing {

struct RegistryOptions {
  enum class Auth { kNone, kBasic, kToken };
  Auth auth = Auth::kNone;
  // The one user (basic and token auth).
  std::string user = "alice";
  std::string password = "wonderland";
  // Token lifetime (expires_in) the token server grants.
  int token_seconds = 300;
  // When not 0, the registry honours each token only this many seconds
  // (the token's own expiry) whatever token_seconds tells the client: a
  // token that stops working early, as a revoked one does. Negative: a
  // token that never works.
  int token_honoured_seconds = 0;
};

// A child process killed (SIGKILL) and reaped by the destructor.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Runs argv[0] with its stdout and stderr into `log_path`. Returns the
  // first line of its stdout when `first_line` is set (the line is not
  // logged then). Throws std::runtime_error on failure.
  std::string Start(const std::vector<std::string>& argv, const std::string& log_path,
                    bool first_line = false);
  // Kills and reaps the process, if any.
  void Stop();

 private:
  pid_t pid_ = -1;
};

class RegistryServer {
 public:
  // Throws std::runtime_error if docker-registry (or htpasswd, openssl,
  // python3 for the token server) is missing or does not come up.
  explicit RegistryServer(RegistryOptions options = {});
  RegistryServer(const RegistryServer&) = delete;
  RegistryServer& operator=(const RegistryServer&) = delete;

  // "127.0.0.1:<port>"
  std::string host() const;
  // "oci://127.0.0.1:<port>/<rest>"
  std::string Ref(std::string_view rest) const;
  // A docker config.json naming this registry with `password` (the right
  // one by default), written into the registry's directory.
  std::string WriteDockerConfig(const std::string& password = "") const;
  // Where the registry keeps the bytes of the blob whose sha256 is `hex`.
  std::string BlobDataPath(const std::string& hex) const;
  // Request lines of the registry's log whose method is `method` and whose
  // URI contains `uri_part`.
  int Requests(std::string_view method, std::string_view uri_part) const;
  // All requests the registry has answered.
  int TotalRequests() const;
  // Requests the token server answered with a token, and refused.
  int TokensIssued() const;
  int TokensRefused() const;
  // Stops the token server: later token requests are refused connections.
  void StopTokenServer() { token_server_.Stop(); }
  const RegistryOptions& options() const { return options_; }

 private:
  RegistryOptions options_;
  TempDir dir_;
  int port_ = 0;
  ChildProcess token_server_;
  ChildProcess registry_;
};

// An HTTP proxy on 127.0.0.1 in front of a registry. It forwards every
// request (Location headers rewritten to point at the proxy), but cuts each
// blob download (GET .../blobs/sha256:...) of more than `min_size` bytes
// off after half its bytes, `drops` times (-1: always), then lets them
// through; and when `drop_patch` is n > 0, it forwards the n-th PATCH (an
// upload chunk) and then closes the connection without answering it: the
// registry has the chunk, the client does not know; when it is -n, it
// answers the n-th PATCH 503 without forwarding it.
class DroppingProxy {
 public:
  DroppingProxy(const std::string& upstream_host, int drops, std::uint64_t min_size = 0,
                int drop_patch = 0);
  DroppingProxy(const DroppingProxy&) = delete;
  DroppingProxy& operator=(const DroppingProxy&) = delete;
  std::string host() const;
  // Blob downloads cut off so far, blob GETs received, PATCHes dropped.
  int Drops() const;
  int BlobGets() const;
  int PatchDrops() const;

 private:
  TempDir dir_;
  int port_ = 0;
  ChildProcess process_;
};

}  // namespace carton::testing
