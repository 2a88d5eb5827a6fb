// The OCI distribution API client (oci/FORMAT.md "The registry client").
#include "carton/oci/client.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "auth.h"
#include "carton/manifest/sha256.h"
#include "carton/net/http_access.h"
#include "carton/net/http_client.h"
#include "carton/net/url_target.h"
#include "mounts.h"

namespace carton::oci {
namespace {

using net::HttpRequest;
using net::HttpResponse;

using Clock = std::chrono::steady_clock;

constexpr char kManifestAccept[] =
    "Accept: application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.oci.image.index.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json";
constexpr char kOctetStream[] = "Content-Type: application/octet-stream";
// Tokens are renewed this long before they expire, so a request never
// reaches the registry with one that has just run out.
constexpr auto kTokenMargin = std::chrono::seconds(10);
// Blob downloads may take long: they start only with a token that has at
// least this long left.
constexpr auto kDownloadTokenMargin = std::chrono::seconds(30);
// Repositories tried as mount sources per blob.
constexpr std::size_t kMaxMountSources = 3;
constexpr std::uint64_t kMaxErrorBody = 64 << 10;
// Most bytes of a token server's answer.
constexpr std::uint64_t kMaxTokenAnswer = 1 << 20;
// Most bytes of an error body quoted in a message.
constexpr std::size_t kMaxBodyShown = 200;

// `host` without brackets or port.
bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  unsigned char v4[4];
  if (::inet_pton(AF_INET, host.c_str(), v4) == 1) return v4[0] == 127;
  unsigned char v6[16];
  if (::inet_pton(AF_INET6, host.c_str(), v6) == 1) {
    static constexpr unsigned char kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::equal(v6, v6 + 16, kLoopback);
  }
  return false;
}

// The host of "HOST[:PORT]" or "[V6][:PORT]", as net::UrlTarget gives a
// host (lowercase, without brackets).
std::string RegistryHost(std::string_view registry) {
  std::string host(registry);
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (const auto colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  return net::NormalizeHost(host);
}

bool IsLoopbackRegistry(std::string_view registry) {
  return IsLoopbackHost(RegistryHost(registry));
}

// "HOST[:PORT]" of a URL's target, as a credentials file names a registry
// (the port only when it is not the scheme's default).
std::string HostKey(const net::UrlTarget& t, bool with_port) {
  const std::string host = t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host;
  const bool default_port =
      (t.scheme == "https" && t.port == 443) || (t.scheme == "http" && t.port == 80);
  return with_port && !default_port ? host + ":" + std::to_string(t.port) : host;
}

std::string BasicHeaderOf(const Credentials& c) {
  return "Authorization: Basic " + Base64Encode(c.username + ":" + c.password);
}

std::string PullScope(const std::string& repo) { return "repository:" + repo + ":pull"; }

// `ours` plus the scopes of `theirs` (space-separated "type:name:actions")
// that it does not already grant.
std::string MergeScopes(const std::string& ours, const std::string& theirs) {
  auto split = [](std::string_view s, char sep) {
    std::vector<std::string> out;
    while (!s.empty()) {
      const auto at = s.find(sep);
      if (at != 0) out.emplace_back(s.substr(0, at));
      if (at == std::string_view::npos) break;
      s.remove_prefix(at + 1);
    }
    return out;
  };
  std::string merged = ours;
  const auto mine = split(ours, ' ');
  for (const std::string& scope : split(theirs, ' ')) {
    const auto colon = scope.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string resource = scope.substr(0, colon);
    const auto actions = split(std::string_view(scope).substr(colon + 1), ',');
    bool granted = false;
    for (const std::string& m : mine) {
      const auto mc = m.rfind(':');
      if (mc == std::string::npos || m.substr(0, mc) != resource) continue;
      const auto have = split(std::string_view(m).substr(mc + 1), ',');
      granted = std::all_of(actions.begin(), actions.end(), [&](const std::string& a) {
        return std::find(have.begin(), have.end(), a) != have.end();
      });
    }
    if (!granted) merged += " " + scope;
  }
  return merged;
}
std::string PushScope(const std::string& repo) { return "repository:" + repo + ":pull,push"; }

// The start of a response's body when it is text: its first
// kMaxBodyShown bytes, "..." marking a body cut there (or at max_body).
std::string BodyText(const HttpResponse& r) {
  std::string text = r.body.substr(0, kMaxBodyShown);
  if (!std::all_of(text.begin(), text.end(),
                   [](char c) { return static_cast<unsigned char>(c) >= 0x20 || c == '\n'; })) {
    return "";
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && (r.body.size() > kMaxBodyShown || r.body_truncated)) text += "...";
  return text;
}

// The registry's explanation of a failed response: its JSON error, else
// the start of the body.
std::string Explain(const HttpResponse& r) {
  std::string why = RegistryError(r.body);
  if (why.empty()) why = BodyText(r);
  return "http status " + std::to_string(r.status) + (why.empty() ? "" : " (" + why + ")");
}

// Who the credentials sent to a token realm belong to.
struct RealmAuth {
  std::optional<Credentials> credentials;  // sent when set
  std::string whose;                       // "HOST[:PORT]" they are configured for
  std::string withheld;                    // why credentials that exist were not sent, or ""
};

}  // namespace

std::string_view BlobPushName(BlobPush how) {
  switch (how) {
    case BlobPush::kPresent:
      return "present";
    case BlobPush::kMounted:
      return "mounted";
    case BlobPush::kUploaded:
      return "uploaded";
  }
  return "?";
}

namespace {

// A 200 answer's body as a manifest (or index). Errors: kCorrupt when it
// was cut at kMaxImageManifestSize.
Result<Manifest> ManifestOf(HttpResponse r, const std::string& what) {
  if (r.body_truncated) {
    return Corrupt(what + ": larger than the limit of " + std::to_string(kMaxImageManifestSize) +
                   " bytes");
  }
  Manifest m;
  m.media_type = r.Header("content-type");
  m.digest = manifest::Sha256Of(AsBytes(r.body));
  m.bytes = std::move(r.body);
  return m;
}

}  // namespace

struct Client::Impl {
  enum class Auth { kUnknown, kNone, kBasic, kBearer };
  struct CachedToken {
    std::string value;
    Clock::time_point expires;
  };

  // The Environment's rules and the client's options, as Open was given
  // them.
  struct Settings {
    net::FetchOptions fetch;
    bool plain_http = false;
    std::string registry_config;
    std::uint64_t chunk_size = 0;
    std::string cache_root;  // "": no mount records
  };

  std::string registry;
  std::string base;
  Settings options;
  std::unique_ptr<net::HttpClient> http;  // its connections, the access rules
  std::optional<Credentials> credentials;

  mutable std::mutex mu;
  // Held while a token is fetched, so that threads that need one at once
  // wait for one fetch instead of making their own.
  mutable std::mutex auth_mu;
  // A token server's refusal of our credentials: every later call fails
  // with it instead of asking again. Guarded by auth_mu.
  mutable Status auth_refused;
  mutable Auth auth = Auth::kUnknown;
  mutable std::string realm, service;
  mutable std::map<std::string, CachedToken> tokens;  // by the scope asked for
  mutable ClientStats stats;

  std::string Where(const std::string& repo) const { return registry + "/" + repo; }
  std::string BlobUrl(const std::string& repo, const manifest::Digest& d) const {
    return base + "/v2/" + repo + "/blobs/" + manifest::DigestString(d);
  }

  Result<HttpResponse> CallOnce(const HttpRequest& call) const {
    CARTON_ASSIGN_OR_RETURN(HttpResponse r, http->Send(call));
    std::lock_guard lock(mu);
    ++stats.requests;
    stats.bytes_uploaded += r.bytes_sent;
    return r;
  }

  std::string BasicHeader() const { return BasicHeaderOf(*credentials); }

  // The realm's URL, if carton may ask it for a token: http(s), and plain
  // http only on a loopback address or with plain_http.
  Result<net::UrlTarget> CheckRealm(const std::string& token_realm) const {
    auto target = net::TargetOf(token_realm);
    if (!target.ok() || (target->scheme != "https" && target->scheme != "http")) {
      return NetworkError(registry + ": the token realm \"" + token_realm +
                          "\" is not an http(s) url");
    }
    if (target->scheme == "http" && !options.plain_http && !IsLoopbackHost(target->host)) {
      return NetworkError(registry + ": the token realm " + token_realm +
                          " is plain http; credentials go to it only over https (or with "
                          "--plain-http)");
    }
    return std::move(target).value();
  }

  // The credentials file's entry for the realm's host ("HOST:PORT", else
  // "HOST"), when it has one.
  Result<std::optional<Credentials>> CredentialsForHost(const net::UrlTarget& realm) const {
    for (bool with_port : {true, false}) {
      CARTON_ASSIGN_OR_RETURN(auto found,
                              FindCredentials(HostKey(realm, with_port), options.registry_config));
      if (found) return found;
    }
    return std::optional<Credentials>();
  }

  // What goes to the token realm (oci/FORMAT.md "Authentication"): the
  // registry's credentials when the realm is on the registry's host (any
  // port); for a realm on another host, only the credentials the file holds
  // for that host, and only over https or to a loopback address; else none.
  Result<RealmAuth> RealmCredentials(const net::UrlTarget& realm) const {
    RealmAuth out;
    if (realm.host == RegistryHost(registry)) {
      out.credentials = credentials;
      out.whose = registry;
      return out;
    }
    const std::string host = HostKey(realm, /*with_port=*/true);
    CARTON_ASSIGN_OR_RETURN(std::optional<Credentials> own, CredentialsForHost(realm));
    if (own && (realm.scheme == "https" || IsLoopbackHost(realm.host))) {
      out.credentials = std::move(own);
      out.whose = host;
    } else if (own) {
      out.withheld = "credentials for " + host + " were not sent to the token server at " + host +
                     " over plain http";
    } else if (credentials) {
      out.withheld = "credentials for " + registry + " were not sent to the token server at " +
                     host + " (another host); add " + host + " to the credentials file to allow it";
    }
    return out;
  }

  // GET realm?service=...&scope=... (one scope parameter per scope).
  static std::string TokenUrl(const std::string& token_realm, const std::string& token_service,
                              const std::string& scope) {
    std::string url = token_realm + (token_realm.find('?') == std::string::npos ? "?" : "&");
    const auto escape = [](const std::string& s) { return net::EscapeUrlComponent(s); };
    url += "service=" + escape(token_service);
    std::string_view rest = scope;
    while (!rest.empty()) {
      const auto space = rest.find(' ');
      const std::string one(rest.substr(0, space));
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      if (!one.empty()) url += "&scope=" + escape(one);
    }
    return url;
  }

  // Why the token server's answer `r` holds no token to parse, or OK.
  Status CheckTokenAnswer(const HttpResponse& r, const std::string& token_realm,
                          const RealmAuth& who) const {
    if (!r.refused.ok()) return r.refused;
    if (r.transport_failed) return NetworkError(token_realm + ": " + r.error);
    if (r.status != 200) {
      return NetworkError(
          registry + ": the token server " + token_realm + " refused " +
          (who.credentials ? "the credentials for " + who.whose : std::string("anonymous access")) +
          ": " + Explain(r) + (who.withheld.empty() ? "" : "; " + who.withheld));
    }
    if (r.body_truncated) {
      return NetworkError(token_realm + ": the token server's answer is larger than the limit of " +
                          std::to_string(kMaxTokenAnswer) + " bytes");
    }
    return Status::Ok();
  }

  // Fetches a token for `scope` from the realm. REQUIRES: mu not held.
  Result<CachedToken> FetchToken(const std::string& token_realm, const std::string& token_service,
                                 const std::string& scope) const {
    CARTON_ASSIGN_OR_RETURN(const net::UrlTarget target, CheckRealm(token_realm));
    CARTON_ASSIGN_OR_RETURN(const RealmAuth who, RealmCredentials(target));
    HttpRequest call;
    call.url = TokenUrl(token_realm, token_service, scope);
    call.max_body = kMaxTokenAnswer;
    if (who.credentials) call.origin_headers.push_back(BasicHeaderOf(*who.credentials));
    const auto started = Clock::now();
    HttpResponse r;
    auto delay = options.fetch.initial_backoff;
    for (int attempt = 1;; ++attempt) {
      CARTON_ASSIGN_OR_RETURN(r, CallOnce(call));
      if (!r.transient() || attempt >= options.fetch.attempts_per_url) break;
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, options.fetch.max_backoff);
    }
    CARTON_RETURN_IF_ERROR(CheckTokenAnswer(r, token_realm, who));
    CARTON_ASSIGN_OR_RETURN(Token t, ParseTokenResponse(r.body, token_realm));
    {
      std::lock_guard lock(mu);
      ++stats.tokens_fetched;
    }
    const auto margin = std::min<std::chrono::seconds>(kTokenMargin, t.lifetime / 2);
    return CachedToken{t.value, started + t.lifetime - margin};
  }

  // The header the state has for `scope` now: "" for none, or nullopt
  // when a bearer token must be fetched (none, or one with less than
  // `margin` left). REQUIRES: mu held.
  std::optional<std::string> CachedHeader(const std::string& scope,
                                          std::chrono::seconds margin) const {
    switch (auth) {
      case Auth::kUnknown:
      case Auth::kNone:
        return std::string();
      case Auth::kBasic:
        return BasicHeader();
      case Auth::kBearer:
        break;
    }
    auto it = tokens.find(scope);
    if (it != tokens.end() && Clock::now() + margin < it->second.expires) {
      return "Authorization: Bearer " + it->second.value;
    }
    return std::nullopt;
  }

  // The Authorization header to send for `scope` now ("" for none),
  // fetching a bearer token when the cached one has less than `margin`
  // left. One thread fetches; the others wait for its token.
  Result<std::string> AuthHeader(const std::string& scope,
                                 std::chrono::seconds margin = std::chrono::seconds(0)) const {
    {
      std::lock_guard lock(mu);
      if (auto h = CachedHeader(scope, margin)) return *h;
    }
    std::lock_guard fetching(auth_mu);
    CARTON_RETURN_IF_ERROR(auth_refused);
    std::string token_realm, token_service;
    {
      std::lock_guard lock(mu);
      if (auto h = CachedHeader(scope, margin)) return *h;
      token_realm = realm;
      token_service = service;
    }
    auto t = FetchToken(token_realm, token_service, scope);
    if (!t.ok()) {
      auth_refused = t.status();
      return t.status();
    }
    std::lock_guard lock(mu);
    tokens[scope] = *t;
    return "Authorization: Bearer " + t->value;
  }

  // Learns from a 401 to a request sent with `sent` (its Authorization
  // header, or "") how to authenticate for `scope`, and does it. When
  // another thread did meanwhile, its result is used.
  Status Authenticate(const HttpResponse& reply, const std::string& scope, const std::string& sent,
                      const std::string& what) const {
    std::lock_guard fetching(auth_mu);
    CARTON_RETURN_IF_ERROR(auth_refused);
    {
      std::lock_guard lock(mu);
      if (auth == Auth::kBearer || (auth == Auth::kBasic && sent.empty())) {
        auto h = CachedHeader(scope, std::chrono::seconds(0));
        if (h && *h != sent) return Status::Ok();
      }
    }
    const std::vector<Challenge> challenges = ParseChallenges(reply.Headers("www-authenticate"));
    for (const Challenge& c : challenges) {
      if (c.scheme != "bearer") continue;
      auto r = c.params.find("realm");
      if (r == c.params.end() || r->second.empty()) continue;
      auto sc = c.params.find("scope");
      // Ask for what the registry names as well as what this call needs.
      const std::string want = MergeScopes(scope, sc == c.params.end() ? "" : sc->second);
      const auto sv = c.params.find("service");
      const std::string svc = sv == c.params.end() ? "" : sv->second;
      auto fetched = FetchToken(r->second, svc, want);
      if (!fetched.ok()) {
        auth_refused = fetched.status();
        return fetched.status();
      }
      const CachedToken t = std::move(fetched).value();
      std::lock_guard lock(mu);
      auth = Auth::kBearer;
      realm = r->second;
      service = svc;
      tokens[scope] = t;
      return Status::Ok();
    }
    for (const Challenge& c : challenges) {
      if (c.scheme != "basic") continue;
      if (!credentials) {
        return NetworkError(what + ": the registry asks for credentials (" + Explain(reply) +
                            ") and none are configured for " + registry +
                            " (--registry-config, $CARTON_REGISTRY_AUTH, ~/.docker/config.json)");
      }
      if (!sent.empty()) {
        // These very credentials were refused.
        return NetworkError(what + ": access denied: " + Explain(reply) +
                            " (with the credentials configured for " + registry + ")");
      }
      std::lock_guard lock(mu);
      auth = Auth::kBasic;
      return Status::Ok();
    }
    return NetworkError(what + ": " + Explain(reply) +
                        " without a Bearer or Basic challenge carton can answer");
  }

  // Sends `call` with the credentials `scope` needs: retries transient
  // failures (when `retry`), and answers one 401 by authenticating. The
  // reply may have any status; a transfer that never completed is an
  // error.
  Result<HttpResponse> Send(HttpRequest call, const std::string& scope, const std::string& what,
                            bool retry = true) const {
    auto delay = options.fetch.initial_backoff;
    bool authenticated = false;
    const std::vector<std::string> origin = call.origin_headers;
    for (int attempt = 1;;) {
      CARTON_ASSIGN_OR_RETURN(std::string header, AuthHeader(scope));
      call.origin_headers = origin;
      if (!header.empty()) call.origin_headers.push_back(header);
      CARTON_ASSIGN_OR_RETURN(HttpResponse r, CallOnce(call));
      if (!r.refused.ok()) return r.refused;
      if (r.answered() && r.status == 401 && !authenticated) {
        CARTON_RETURN_IF_ERROR(Authenticate(r, scope, header, what));
        authenticated = true;
        continue;
      }
      if (r.answered() && r.status != 401) {
        std::lock_guard lock(mu);
        if (auth == Auth::kUnknown) auth = Auth::kNone;
      }
      if (retry && r.transient() && attempt < options.fetch.attempts_per_url) {
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 2, options.fetch.max_backoff);
        ++attempt;
        continue;
      }
      if (r.transport_failed) {
        return NetworkError(
            what + ": " + (r.deadline_passed ? r.url + ": " : "") + r.error +
            (attempt > 1 ? " (after " + std::to_string(attempt) + " attempts)" : ""));
      }
      return r;
    }
  }

  // Runs `download` (one blob GET, with its retries) with the options and
  // Authorization header for pulling from `repo`; renews a token the
  // registry refuses once. Errors: `download`'s, prefixed with the blob.
  using DownloadFn = std::function<Status(net::FetchOptions&)>;
  Status Download(const std::string& repo, const manifest::Digest& digest, const Client& client,
                  const DownloadFn& download) const;

  // The error for an unexpected answer to `what`.
  Status Failure(const HttpResponse& r, const std::string& what) const {
    if (r.status == 401 || r.status == 403) {
      return NetworkError(what + ": access denied: " + Explain(r) +
                          (credentials ? " (with the credentials configured for " + registry + ")"
                                       : " (no credentials are configured for " + registry + ")"));
    }
    if (r.status == 404) return NotFound(what + ": not found: " + Explain(r));
    return NetworkError(what + ": " + Explain(r));
  }

  // A Location header as an absolute URL.
  std::string Resolve(const std::string& location) const {
    if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) return location;
    if (!location.empty() && location.front() == '/') return base + location;
    return base + "/" + location;
  }

  Result<std::string> StartUpload(const std::string& repo, const std::string& what) const {
    HttpRequest call;
    call.method = "POST";
    call.url = base + "/v2/" + repo + "/blobs/uploads/";
    call.max_body = kMaxErrorBody;
    CARTON_ASSIGN_OR_RETURN(HttpResponse r, Send(call, PushScope(repo), what));
    const std::string location = r.Header("location");
    if (r.status != 202 || location.empty()) return Failure(r, what + ": starting an upload");
    return Resolve(location);
  }

  // PUT <location>?digest=..., with the last bytes (or none).
  // `*retryable` tells whether a new session may do better.
  Status FinishUpload(const std::string& repo, const std::string& location,
                      const manifest::Digest& digest, ByteView tail, const std::string& what,
                      bool* retryable) const {
    *retryable = false;
    HttpRequest call;
    call.method = "PUT";
    call.url = location + (location.find('?') == std::string::npos ? "?" : "&") +
               "digest=sha256%3A" + manifest::ToHex(digest);
    call.headers.push_back(kOctetStream);
    call.body = tail;
    call.max_body = kMaxErrorBody;
    // A broken PUT leaves the session in an unknown state: the caller
    // starts a new one rather than sending the bytes again here.
    auto r = Send(call, PushScope(repo), what, /*retry=*/false);
    if (!r.ok()) {
      *retryable = r.status().code() == StatusCode::kNetworkError;
      return r.status();
    }
    if (r->status != 201) {
      *retryable = r->transient();
      return Failure(*r, what);
    }
    const std::string got = r->Header("docker-content-digest");
    if (!got.empty() && got != manifest::DigestString(digest)) {
      return NetworkError(what + ": the registry stored digest " + got);
    }
    return Status::Ok();
  }

  // The offset the upload session at `location` has reached, and its
  // current location.
  Result<std::pair<std::uint64_t, std::string>> UploadStatus(const std::string& repo,
                                                             const std::string& location,
                                                             const std::string& what) const {
    HttpRequest call;
    call.url = location;
    call.max_body = kMaxErrorBody;
    CARTON_ASSIGN_OR_RETURN(HttpResponse r, Send(call, PushScope(repo), what));
    if (r.status != 204) return Failure(r, what + ": upload status");
    const std::string range = r.Header("range");
    const std::string next = r.Header("location");
    const std::string at = next.empty() ? location : Resolve(next);
    const auto dash = range.find('-');
    // "0-0" is what registries say for an empty upload (and for one byte,
    // which chunks of more than one byte never leave).
    if (dash == std::string::npos || range == "0-0") {
      return std::pair<std::uint64_t, std::string>{0, at};
    }
    const std::uint64_t end = std::strtoull(range.c_str() + dash + 1, nullptr, 10);
    return std::pair<std::uint64_t, std::string>{end + 1, at};
  }

  // Uploads in PATCH chunks, resuming after broken ones where the registry
  // says the upload stands.
  Status UploadChunked(const std::string& repo, std::string location,
                       const manifest::Digest& digest, ByteView data, const std::string& what,
                       bool* retryable) const {
    *retryable = false;
    std::uint64_t offset = 0;
    int failures = 0;
    while (offset < data.size()) {
      const std::uint64_t end = std::min<std::uint64_t>(data.size(), offset + options.chunk_size);
      HttpRequest call;
      call.method = "PATCH";
      call.url = location;
      call.headers.push_back(kOctetStream);
      call.headers.push_back("Content-Range: " + std::to_string(offset) + "-" +
                             std::to_string(end - 1));
      call.body = data.subspan(offset, end - offset);
      call.max_body = kMaxErrorBody;
      auto r = Send(call, PushScope(repo), what, /*retry=*/false);
      if (r.ok() && r->status == 202) {
        const std::string next = r->Header("location");
        if (!next.empty()) location = Resolve(next);
        offset = end;
        continue;
      }
      // Any other answer but a refusal of our credentials (a 416 or a
      // BLOB_UPLOAD_INVALID when a chunk the registry took, its answer
      // lost, was sent again): ask the registry where the upload stands.
      if (r.ok() && (r->status == 401 || r->status == 403)) {
        return Failure(*r, what + ": chunk at " + std::to_string(offset));
      }
      if (!r.ok() && r.status().code() != StatusCode::kNetworkError) return r.status();
      if (++failures >= options.fetch.attempts_per_url) {
        return r.ok() ? Failure(*r, what) : r.status();
      }
      std::this_thread::sleep_for(options.fetch.initial_backoff);
      auto state = UploadStatus(repo, location, what);
      if (!state.ok()) {
        // The session is lost (a registry may refuse an upload state it
        // has moved past): a new one may work.
        *retryable = true;
        return r.ok() ? Failure(*r, what + ": chunk at " + std::to_string(offset)) : r.status();
      }
      offset = std::min<std::uint64_t>(state->first, data.size());
      location = state->second;
    }
    return FinishUpload(repo, location, digest, {}, what, retryable);
  }

  Status Upload(const std::string& repo, std::optional<std::string> session,
                const manifest::Digest& digest, ByteView data) const {
    const std::string what = Where(repo) + ": uploading blob " + manifest::DigestString(digest);
    Status last;
    for (int attempt = 1; attempt <= options.fetch.attempts_per_url; ++attempt) {
      std::string location;
      if (session) {
        location = *session;
        session.reset();
      } else {
        CARTON_ASSIGN_OR_RETURN(location, StartUpload(repo, what));
      }
      bool retryable = false;
      last = data.size() > options.chunk_size
                 ? UploadChunked(repo, location, digest, data, what, &retryable)
                 : FinishUpload(repo, location, digest, data, what, &retryable);
      if (last.ok() || !retryable) return last;
      std::this_thread::sleep_for(options.fetch.initial_backoff);
    }
    return last;
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Open(const std::string& registry,
                                             const Environment& environment,
                                             const ClientOptions& options) {
  if (registry.empty()) return InvalidArgument("no registry given");
  if (options.chunk_size == 0) return InvalidArgument("chunk_size must not be 0");
  if (environment.network.attempts_per_url < 1) {
    return InvalidArgument("attempts_per_url must be at least 1");
  }
  auto impl = std::make_unique<Impl>();
  impl->registry = registry;
  Impl::Settings& settings = impl->options;
  settings.fetch = environment.network;
  settings.plain_http = environment.plain_http;
  settings.registry_config = environment.registry_config;
  settings.chunk_size = options.chunk_size;
  if (auto root = environment.CacheRoot(); root.ok()) settings.cache_root = *root;
  const bool plain = settings.plain_http || IsLoopbackRegistry(registry);
  impl->base = (plain ? "http://" : "https://") + registry;
  CARTON_ASSIGN_OR_RETURN(impl->http, net::HttpClient::Create(settings.fetch));
  if (options.credentials) {
    impl->credentials = options.credentials;
  } else {
    CARTON_ASSIGN_OR_RETURN(impl->credentials, FindCredentials(registry, settings.registry_config));
  }
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const std::string& Client::base_url() const { return impl_->base; }

ClientStats Client::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

Result<Manifest> Client::GetManifest(const std::string& repo, const std::string& target) const {
  const std::string what = impl_->Where(repo) + ": manifest " + target;
  HttpRequest call;
  call.url = impl_->base + "/v2/" + repo + "/manifests/" + target;
  call.headers.push_back(kManifestAccept);
  call.max_body = kMaxImageManifestSize;
  CARTON_ASSIGN_OR_RETURN(HttpResponse r, impl_->Send(call, PullScope(repo), what));
  if (r.status != 200) return impl_->Failure(r, what);
  CARTON_ASSIGN_OR_RETURN(Manifest m, ManifestOf(std::move(r), what));
  if (target.rfind("sha256:", 0) == 0 && manifest::DigestString(m.digest) != target) {
    return Corrupt(what + ": the registry sent a manifest whose sha256 is " +
                   manifest::ToHex(m.digest));
  }
  return m;
}

Result<std::optional<Manifest>> Client::GetReferrers(const std::string& repo,
                                                     const manifest::Digest& subject) const {
  const std::string what = impl_->Where(repo) + ": referrers of " + manifest::DigestString(subject);
  HttpRequest call;
  call.url = impl_->base + "/v2/" + repo + "/referrers/" + manifest::DigestString(subject);
  call.headers.push_back("Accept: application/vnd.oci.image.index.v1+json");
  call.max_body = kMaxImageManifestSize;
  CARTON_ASSIGN_OR_RETURN(HttpResponse r, impl_->Send(call, PullScope(repo), what));
  if (r.status == 404 || r.status == 400 || r.status == 405 || r.status == 501) {
    return std::optional<Manifest>();
  }
  if (r.status != 200) return impl_->Failure(r, what);
  CARTON_ASSIGN_OR_RETURN(Manifest m, ManifestOf(std::move(r), what));
  return std::optional<Manifest>(std::move(m));
}

Result<manifest::Digest> Client::PutManifest(const std::string& repo, const std::string& target,
                                             std::string_view media_type, ByteView bytes) const {
  const std::string what = impl_->Where(repo) + ": putting manifest " + target;
  HttpRequest call;
  call.method = "PUT";
  call.url = impl_->base + "/v2/" + repo + "/manifests/" + target;
  call.headers.push_back("Content-Type: " + std::string(media_type));
  call.body = bytes;
  call.max_body = kMaxErrorBody;
  CARTON_ASSIGN_OR_RETURN(HttpResponse r, impl_->Send(call, PushScope(repo), what));
  if (r.status != 201) return impl_->Failure(r, what);
  const manifest::Digest digest = manifest::Sha256Of(bytes);
  const std::string got = r.Header("docker-content-digest");
  if (!got.empty() && got != manifest::DigestString(digest)) {
    return NetworkError(what + ": the registry stored digest " + got + ", not " +
                        manifest::DigestString(digest));
  }
  return digest;
}

Result<std::optional<std::uint64_t>> Client::StatBlob(const std::string& repo,
                                                      const manifest::Digest& digest) const {
  const std::string what = impl_->Where(repo) + ": blob " + manifest::DigestString(digest);
  HttpRequest call;
  call.method = "HEAD";
  call.url = impl_->BlobUrl(repo, digest);
  CARTON_ASSIGN_OR_RETURN(HttpResponse r, impl_->Send(call, PullScope(repo), what));
  if (r.status == 404) return std::optional<std::uint64_t>();
  if (r.status != 200) return impl_->Failure(r, what);
  const std::string length = r.Header("content-length");
  return std::optional<std::uint64_t>(std::strtoull(length.c_str(), nullptr, 10));
}

Result<BlobPush> Client::PushBlob(const std::string& repo, const manifest::Digest& digest,
                                  ByteView data) const {
  return PushBlobLazily(repo, digest, data.size(), [data]() -> Result<ByteView> { return data; });
}

Result<BlobPush> Client::PushBlobLazily(const std::string& repo, const manifest::Digest& digest,
                                        std::uint64_t size, const Producer& produce) const {
  const Impl& m = *impl_;
  const std::string what = m.Where(repo) + ": blob " + manifest::DigestString(digest);
  {
    HttpRequest call;
    call.method = "HEAD";
    call.url = m.BlobUrl(repo, digest);
    CARTON_ASSIGN_OR_RETURN(HttpResponse r, m.Send(call, PushScope(repo), what));
    if (r.status == 200) {
      RememberRepository(m.options.cache_root, m.registry, repo, digest);
      return BlobPush::kPresent;
    }
    if (r.status != 404) return m.Failure(r, what);
  }
  std::optional<std::string> session;
  const auto sources = KnownRepositories(m.options.cache_root, m.registry, repo, digest);
  for (std::size_t i = 0; i < sources.size() && i < kMaxMountSources && !session; ++i) {
    HttpRequest call;
    call.method = "POST";
    call.url = m.base + "/v2/" + repo + "/blobs/uploads/?mount=sha256%3A" +
               manifest::ToHex(digest) + "&from=" + sources[i];
    call.max_body = kMaxErrorBody;
    auto r = m.Send(call, PushScope(repo) + " " + PullScope(sources[i]), what + ": mount");
    if (!r.ok()) continue;  // a failed mount only means an upload
    if (r->status == 201) {
      RememberRepository(m.options.cache_root, m.registry, repo, digest);
      return BlobPush::kMounted;
    }
    if (r->status == 202 && !r->Header("location").empty()) {
      session = m.Resolve(r->Header("location"));  // the registry started an upload instead
    }
  }
  CARTON_ASSIGN_OR_RETURN(ByteView data, produce());
  if (data.size() != size) {
    return Internal(what + ": " + std::to_string(data.size()) + " bytes to upload, expected " +
                    std::to_string(size));
  }
  CARTON_RETURN_IF_ERROR(m.Upload(repo, std::move(session), digest, data));
  RememberRepository(m.options.cache_root, m.registry, repo, digest);
  return BlobPush::kUploaded;
}

Status Client::Impl::Download(const std::string& repo, const manifest::Digest& digest,
                              const Client& client, const DownloadFn& download) const {
  const std::string what = Where(repo) + ": blob " + manifest::DigestString(digest);
  bool unknown = false;
  {
    std::lock_guard lock(mu);
    unknown = auth == Auth::kUnknown;
  }
  if (unknown) {
    // Learn how this registry authenticates before a long download.
    CARTON_ASSIGN_OR_RETURN(auto present, client.StatBlob(repo, digest));
    if (!present) return NotFound(what + ": not found");
  }
  for (int round = 1;; ++round) {
    CARTON_ASSIGN_OR_RETURN(std::string header, AuthHeader(PullScope(repo), kDownloadTokenMargin));
    net::FetchOptions f = options.fetch;
    f.access = http->access();
    if (!header.empty()) f.headers.push_back(header);
    if (f.progress_label.empty()) f.progress_label = manifest::DigestString(digest);
    Status st = download(f);
    bool bearer = false;
    {
      std::lock_guard lock(mu);
      ++stats.requests;
      bearer = auth == Auth::kBearer;
    }
    if (st.ok()) {
      RememberRepository(options.cache_root, registry, repo, digest);
      return st;
    }
    st = Status(st.code(), what + ": " + st.message());
    if (round > 1 || !bearer || st.code() != StatusCode::kNetworkError) return st;
    // A registry may stop honouring a token before the time it was given
    // for (it expired early, or was revoked): the download is refused with
    // 401. A HEAD answers that 401 by fetching a new token (Send), and the
    // download runs once more with it; with the same token it would fail
    // the same way.
    auto present = client.StatBlob(repo, digest);
    if (!present.ok()) return present.status();
    auto renewed = AuthHeader(PullScope(repo), kDownloadTokenMargin);
    if (!renewed.ok()) return renewed.status();
    if (!*present || *renewed == header) return st;
  }
}

Result<std::string> Client::FetchBlob(
    const links::BlobCache& cache, const std::string& repo, const manifest::Digest& digest,
    std::uint64_t size, const std::function<void(int fd, std::uint64_t length)>& on_written) const {
  const Impl& m = *impl_;
  // A cached blob was verified when it was written, so its size is the
  // truth: a manifest that claims another is wrong (and must not make the
  // cache discard a good blob).
  if (auto hit = cache.Get(digest); hit.ok()) {
    std::error_code ec;
    const auto actual = std::filesystem::file_size(*hit, ec);
    if (!ec && actual != size) {
      return Corrupt(m.Where(repo) + ": blob " + manifest::DigestString(digest) +
                     " is said to have " + std::to_string(size) + " bytes, but it has " +
                     std::to_string(actual));
    }
    if (!ec) return hit;
  }
  std::string path;
  CARTON_RETURN_IF_ERROR(m.Download(repo, digest, *this, [&](net::FetchOptions& f) -> Status {
    if (on_written) f.on_written = on_written;
    auto p = cache.Fetch(digest, {m.BlobUrl(repo, digest)}, size, f);
    if (!p.ok()) return p.status();
    path = *p;
    return Status::Ok();
  }));
  std::lock_guard lock(m.mu);
  m.stats.bytes_downloaded += size;
  return path;
}

Status Client::FetchBlobToStream(const std::string& repo, const manifest::Digest& digest,
                                 std::uint64_t size, net::StreamSink& sink) const {
  const Impl& m = *impl_;
  CARTON_RETURN_IF_ERROR(m.Download(repo, digest, *this, [&](net::FetchOptions& f) {
    return net::FetchToStream({m.BlobUrl(repo, digest)}, digest, size, sink, f);
  }));
  std::lock_guard lock(m.mu);
  m.stats.bytes_downloaded += size;
  return Status::Ok();
}

}  // namespace carton::oci
