// An OCI registry client: the parts of the OCI distribution API that moving
// files through a registry needs (oci/FORMAT.md "The registry client").
//
//   oci://HOST[:PORT]/REPO[:TAG|@sha256:DIGEST]
//
// Manifests by tag or digest; blobs by digest: HEAD, GET (into a file or the
// blob cache, verified by sha256 before it becomes visible, with the
// retries of net::FetchToFile), upload (monolithic, or in PATCH chunks for large
// blobs, resumed after a broken connection), and cross-repository mounts.
// Authentication as registries do it: anonymous, HTTP basic, or the bearer
// token flow (a 401 with `WWW-Authenticate: Bearer realm=...,service=...,
// scope=...`, a token fetched from the realm, reused until it expires). A
// realm on the registry's host gets the registry's credentials; a realm on
// another host only those configured for that host (oci/FORMAT.md "Which
// credentials a token realm gets"). Credentials come from a file in the
// format of ~/.docker/config.json. Every answer is untrusted: it stops at
// its limit, and every request but a blob download at the exchange
// deadline (oci/FORMAT.md "Limits"). Plain HTTP is used only for loopback
// registries or when asked for; every request follows
// net::FetchOptions::access (allowlist, link-local rule, per-host headers).
//
// Thread-safety: a Client may be used from many threads at once (each call
// takes a connection of its own; tokens are shared under a lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/environment.h"
#include "carton/carton/location.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/links/blob_cache.h"
#include "carton/manifest/sha256.h"
#include "carton/net/fetch.h"

namespace carton::oci {

inline constexpr std::string_view kImageManifestMediaType =
    "application/vnd.oci.image.manifest.v1+json";
// Most bytes of a manifest accepted (what registries accept, too).
inline constexpr std::uint64_t kMaxImageManifestSize = 4 << 20;

// oci:// references are parsed by carton/carton/location.h (OciReference);
// digests are written and parsed by manifest::DigestString and
// manifest::ParseDigestString.

// Credentials for one registry.
struct Credentials {
  std::string username;
  std::string password;
};

// The `auths` of a ~/.docker/config.json: for each registry key ("HOST",
// "HOST:PORT", or a URL such as "https://HOST/v1/"), base64 `user:password`
// in `auth`, or `username` and `password`. Entries with neither (an
// `identitytoken` alone, credential helpers) are skipped. Untrusted text;
// `source` names it in messages. Errors: kInvalidArgument.
Result<std::map<std::string, Credentials>> ParseDockerConfig(std::string_view json,
                                                             std::string_view source);

// What a registry answers, parsed for the client (untrusted text; also
// fuzz targets).
//
// One challenge of a WWW-Authenticate header: `Bearer realm="...",
// service="...", scope="..."` or `Basic realm="..."`.
struct Challenge {
  std::string scheme;                         // lowercase: "bearer", "basic"
  std::map<std::string, std::string> params;  // names lowercase
};
// Every challenge in the given WWW-Authenticate values (RFC 9110 11.6.1:
// comma-separated challenges of auth-params, values quoted or tokens).
// What cannot be parsed is skipped.
std::vector<Challenge> ParseChallenges(const std::vector<std::string>& values);

// A bearer token from a token endpoint's JSON answer ({"token": ...} or
// {"access_token": ...}, "expires_in" seconds, 60 when absent).
struct Token {
  std::string value;  // printable ASCII, no spaces: it goes into a header
  std::chrono::seconds lifetime{60};
};
// Errors: kNetworkError naming `realm` (not JSON, no token, a token that
// cannot be sent in a header).
Result<Token> ParseTokenResponse(std::string_view body, std::string_view realm);

// The registry's error in a JSON error body ({"errors": [{"code": ...,
// "message": ...}]}) as "CODE: message; ...", at most 4 of them, each cut
// to 300 bytes with control characters made spaces; "" when there is none.
std::string RegistryError(std::string_view body);

// The credentials for `registry` ("HOST[:PORT]"), from the first of:
// `config_path` if not empty; $CARTON_REGISTRY_AUTH (a path, or the JSON
// itself when it starts with '{'); $DOCKER_CONFIG/config.json;
// ~/.docker/config.json (the last two only if they exist). nullopt when
// that file has no entry for the registry. Errors: kNotFound (a named file
// is missing), kIoError, kInvalidArgument (bad JSON).
Result<std::optional<Credentials>> FindCredentials(std::string_view registry,
                                                   const std::string& config_path);

// What a client takes beyond the Environment.
struct ClientOptions {
  // Used instead of FindCredentials when set.
  std::optional<Credentials> credentials;
  // Blobs larger than this are uploaded in PATCH chunks of this size.
  std::uint64_t chunk_size = std::uint64_t{64} << 20;
};

struct Manifest {
  std::string media_type;  // the response's Content-Type
  std::string bytes;
  manifest::Digest digest{};  // sha256 of `bytes`
};

// How PushBlob got a blob into the repository.
enum class BlobPush : std::uint8_t { kPresent, kMounted, kUploaded };
std::string_view BlobPushName(BlobPush how);  // "present", "mounted", "uploaded"

struct ClientStats {
  std::uint64_t requests = 0;  // HTTP requests to the registry and its realm
  std::uint64_t tokens_fetched = 0;
  std::uint64_t bytes_uploaded = 0;
  std::uint64_t bytes_downloaded = 0;  // blob bytes fetched into files
};

class Client {
 public:
  // A client for `registry` ("HOST[:PORT]") with the Environment's rules:
  // its network rules (retries, timeouts, the allowlist and per-host
  // headers) for every request (network.exchange_timeout: the deadline of
  // every request but blob downloads), plain_http (http:// for a registry
  // that is not on a loopback address; loopback registries always get
  // http://, others https://), registry_config (FindCredentials), and the
  // cache root, where it remembers which repositories hold which blobs to
  // mount them from there (oci/mounts; none when no cache root can be
  // named). Finds the credentials now; makes no request. Errors: those of
  // FindCredentials; kInvalidArgument.
  static Result<std::unique_ptr<Client>> Open(const std::string& registry,
                                              const Environment& environment,
                                              const ClientOptions& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // "http://HOST[:PORT]" or "https://HOST[:PORT]".
  const std::string& base_url() const;

  // GETs the manifest `target` (a tag or "sha256:<hex>") of `repository`,
  // accepting OCI image manifests and indexes and Docker v2 manifests. A
  // manifest fetched by digest must have that digest.
  // Errors: kNotFound (unknown repository or tag: the registry's error
  // code and message), kCorrupt (digest mismatch, larger than
  // kMaxImageManifestSize: the transfer stops there), kNetworkError (401/403
  // with the registry's message, other statuses, transfers, no complete
  // answer within the exchange deadline), kInvalidArgument (refused by
  // `access`).
  Result<Manifest> GetManifest(const std::string& repository, const std::string& target) const;

  // PUTs `bytes` as manifest `target` (a tag, or its digest) of
  // `repository`. Returns its digest. Errors: as GetManifest; the
  // registry's refusal (e.g. MANIFEST_BLOB_UNKNOWN) is kNetworkError.
  Result<manifest::Digest> PutManifest(const std::string& repository, const std::string& target,
                                       std::string_view media_type, ByteView bytes) const;

  // GETs the referrers of manifest `subject` (the OCI distribution API
  // 1.1: GET /v2/<repository>/referrers/<digest>): an OCI image index, or
  // nullopt when the registry has no referrers API (404, 400, 405 or 501:
  // use the tag schema "sha256-<hex>" instead). Errors: as GetManifest.
  Result<std::optional<Manifest>> GetReferrers(const std::string& repository,
                                               const manifest::Digest& subject) const;

  // HEADs the blob: its size when the repository has it, nullopt when not.
  Result<std::optional<std::uint64_t>> StatBlob(const std::string& repository,
                                                const manifest::Digest& digest) const;

  // Makes sure `repository` holds the blob `data` (whose sha256 is
  // `digest`): a HEAD; if it is missing, a mount from another repository of
  // this registry known to hold it (remembered under cache_root), else an
  // upload (PATCH chunks of chunk_size when larger, each retried and
  // resumed where the registry says it stopped). The registry checks the
  // digest. `data` is read only while the call runs.
  // Errors: kNetworkError (the registry refused: a wrong digest is
  // DIGEST_INVALID), and those of GetManifest.
  Result<BlobPush> PushBlob(const std::string& repository, const manifest::Digest& digest,
                            ByteView data) const;

  // As PushBlob, but the bytes are only read (by `produce`, which returns
  // them) when the registry does not have the blob and no mount works.
  using Producer = std::function<Result<ByteView>()>;
  Result<BlobPush> PushBlobLazily(const std::string& repository, const manifest::Digest& digest,
                                  std::uint64_t size, const Producer& produce) const;

  // Downloads the blob into the blob cache (links::BlobCache::Fetch: a cached
  // blob is not downloaded again; the sha256 and size are checked before
  // the file becomes visible, so a tampered blob is never cached). Returns
  // its path. `on_written`, when set, sees the download's file as it grows
  // (net::FetchOptions::on_written; not called for a cached blob). Errors: as
  // net::FetchToFile (kCorrupt for a wrong sha256), and kNotFound for a blob the
  // repository does not have. A registry that refuses the download with
  // 401 although the token has not run out (it expired early, or was
  // revoked) gets one new token and the download is tried once more.
  Result<std::string> FetchBlob(
      const links::BlobCache& cache, const std::string& repository, const manifest::Digest& digest,
      std::uint64_t size,
      const std::function<void(int fd, std::uint64_t length)>& on_written = {}) const;

  // Downloads the blob straight into `sink` (net::FetchToStream: hashed as it
  // streams; OK only when the size and sha256 matched, so the sink must
  // hold back what it got until then). Nothing goes into the blob cache.
  // Errors: as FetchBlob, and the sink's.
  Status FetchBlobToStream(const std::string& repository, const manifest::Digest& digest,
                           std::uint64_t size, net::StreamSink& sink) const;

  ClientStats stats() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton::oci
