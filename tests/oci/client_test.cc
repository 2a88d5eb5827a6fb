// The OCI registry client against Debian's docker-registry on 127.0.0.1:
// anonymous, with htpasswd basic auth, and with the bearer token flow (the
// registry verifies every token the test's token server signs).
#include "carton/oci/client.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "registry_testing.h"
#include "string_sink_testing.h"
#include "testing.h"

namespace carton::oci {
namespace {

using carton::testing::DroppingProxy;
using carton::testing::RegistryOptions;
using carton::testing::RegistryServer;
using carton::testing::StringSink;
using carton::testing::TempDir;

// A docker config with no credentials, so that tests never read the
// machine's.
const std::string& EmptyConfig() {
  static TempDir dir;
  static const std::string path = [] {
    carton::testing::WriteBytes(dir.file("empty.json"), AsBytes("{\"auths\": {}}"));
    return dir.file("empty.json");
  }();
  return path;
}

Environment Quick() {
  Environment o;
  o.network.attempts_per_url = 2;
  o.network.initial_backoff = std::chrono::milliseconds(10);
  o.network.max_backoff = std::chrono::milliseconds(50);
  o.network.show_progress = false;
  o.network.access = net::HttpAccess{};
  o.registry_config = EmptyConfig();
  return o;
}

std::string Blob(std::size_t size, int seed) {
  std::string s;
  for (int i = 0; s.size() < size; ++i) s += std::to_string(seed) + ":" + std::to_string(i) + ";";
  s.resize(size);
  return s;
}

std::unique_ptr<Client> Open(const RegistryServer& registry, const Environment& o,
                             const ClientOptions& options = {}) {
  auto c = Client::Open(registry.host(), o, options);
  REQUIRE(c.ok());
  return std::move(c).value();
}

void RequireFailure(const Status& s, StatusCode code, const std::string& part) {
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK(s.message().find(part) != std::string::npos);
}

TEST_CASE("oci: parses references", "[oci]") {
  auto r = ParseOciReference("oci://Registry.Example.com:5000/team/model:v1.2");
  REQUIRE(r.ok());
  CHECK(r->registry == "registry.example.com:5000");
  CHECK(r->repository == "team/model");
  CHECK(r->tag == "v1.2");
  CHECK_FALSE(r->digest);
  CHECK(r->Target() == "v1.2");
  CHECK(r->ToString() == "oci://registry.example.com:5000/team/model:v1.2");

  r = ParseOciReference("oci://localhost/a/b/c");
  REQUIRE(r.ok());
  CHECK(r->tag == "latest");
  const std::string hex(64, 'a');
  r = ParseOciReference("OCI://127.0.0.1:5000/m@sha256:" + hex);
  REQUIRE(r.ok());
  CHECK(r->tag.empty());
  REQUIRE(r->digest);
  CHECK(r->Target() == "sha256:" + hex);
  r = ParseOciReference("oci://[::1]:5000/m:t@sha256:" + hex);
  REQUIRE(r.ok());
  CHECK(r->registry == "[::1]:5000");
  CHECK(r->tag == "t");

  const std::pair<const char*, const char*> bad[] = {
      {"http://host/repo", "not an oci:// reference"},
      {"oci://host", "no repository"},
      {"oci://host/", "empty repository"},
      {"oci://host/Repo", "repository component \"Repo\""},
      {"oci://host/a//b", "repository component \"\""},
      {"oci://host/a/-b", "repository component \"-b\""},
      {"oci://host/repo:", "tag \"\""},
      {"oci://host/repo:.x", "tag \".x\""},
      {"oci://host:0/repo", "registry \"host:0\""},
      {"oci://ho st/repo", "registry \"ho st\""},
      {"oci://host/repo@sha256:abc", "expected sha256: and 64 lowercase hex digits"},
      {"oci://host/repo@md5:abc", "only sha256 digests are supported"},
  };
  for (const auto& [text, why] : bad) {
    INFO(text);
    auto p = ParseOciReference(text);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::kInvalidArgument);
    CHECK(p.status().message().find(why) != std::string::npos);
  }
  CHECK(ParseOciReference("oci://h/" + std::string(256, 'a'))
            .status()
            .message()
            .find("longer than 255") != std::string::npos);
}

TEST_CASE("oci: reads credentials in the docker config format", "[oci][auth]") {
  auto c = ParseDockerConfig(
      R"({"auths": {"registry.example.com:5000": {"auth": "YWxpY2U6cDpzcw=="},
                    "https://index.docker.io/v1/": {"username": "bob", "password": "pw"},
                    "helper.example.com": {"identitytoken": "x"}},
          "credsStore": "desktop"})",
      "config.json");
  REQUIRE(c.ok());
  REQUIRE(c->size() == 2);
  CHECK(c->at("registry.example.com:5000").username == "alice");
  CHECK(c->at("registry.example.com:5000").password == "p:ss");
  CHECK(c->at("index.docker.io").username == "bob");

  auto bad = ParseDockerConfig(R"({"auths": {"h": {"auth": "not base64!"}}})", "cfg");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("cfg: auths.\"h\".auth: not base64", 0) == 0);
  bad = ParseDockerConfig(R"({"auths": {"h": {"auth": "bm9jb2xvbg=="}}})", "cfg");
  CHECK(bad.status().message() == "cfg: auths.\"h\".auth: not base64 of \"user:password\"");
  CHECK(ParseDockerConfig("{", "cfg").status().message().rfind("cfg: not valid JSON", 0) == 0);
  CHECK(ParseDockerConfig(R"({"auths": []})", "cfg").status().message() ==
        "cfg: \"auths\" is not an object");

  TempDir dir;
  carton::testing::WriteBytes(dir.file("c.json"),
                              AsBytes(R"({"auths": {"r:1": {"auth": "dTpw"}}})"));
  auto found = FindCredentials("r:1", dir.file("c.json"));
  REQUIRE(found.ok());
  REQUIRE(*found);
  CHECK((*found)->username == "u");
  found = FindCredentials("other:1", dir.file("c.json"));
  REQUIRE(found.ok());
  CHECK_FALSE(*found);
  CHECK(FindCredentials("r:1", dir.file("missing.json")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("oci: plain http only for loopback registries unless asked for", "[oci]") {
  Environment o = Quick();
  auto c = Client::Open("registry.example.com", o);
  REQUIRE(c.ok());
  CHECK((*c)->base_url() == "https://registry.example.com");
  o.plain_http = true;
  CHECK((*Client::Open("registry.example.com:5000", o))->base_url() ==
        "http://registry.example.com:5000");
  o.plain_http = false;
  CHECK((*Client::Open("127.0.0.1:5000", o))->base_url() == "http://127.0.0.1:5000");
  CHECK((*Client::Open("localhost:5000", o))->base_url() == "http://localhost:5000");
  CHECK((*Client::Open("[::1]:5000", o))->base_url() == "http://[::1]:5000");
}

TEST_CASE("oci: pushes, finds and fetches blobs and manifests", "[oci][registry]") {
  RegistryServer registry;
  TempDir dir;
  Environment o = Quick();
  o.cache_dir = dir.file("cache");
  auto client = Open(registry, o);
  const std::string data = Blob(100'000, 1);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));

  auto stat = client->StatBlob("team/model", digest);
  REQUIRE(stat.ok());
  CHECK_FALSE(*stat);
  auto pushed = client->PushBlob("team/model", digest, AsBytes(data));
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kUploaded);
  pushed = client->PushBlob("team/model", digest, AsBytes(data));
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kPresent);
  stat = client->StatBlob("team/model", digest);
  REQUIRE(stat.ok());
  REQUIRE(*stat);
  CHECK(**stat == data.size());
  CHECK(registry.Requests("PUT", "digest=sha256%3A" + manifest::ToHex(digest)) == 1);

  // A wrong digest is the registry's to refuse.
  const manifest::Digest wrong = manifest::Sha256Of(AsBytes(std::string("other")));
  auto refused = client->PushBlob("team/model", wrong, AsBytes(data));
  REQUIRE_FALSE(refused.ok());
  RequireFailure(refused.status(), StatusCode::kNetworkError, "DIGEST_INVALID");

  links::BlobCache cache(dir.file("cache"));
  auto path = client->FetchBlob(cache, "team/model", digest, data.size());
  REQUIRE(path.ok());
  CHECK(carton::testing::ReadText(*path) == data);
  const int gets = registry.Requests("GET", "/blobs/sha256:");
  REQUIRE(client->FetchBlob(cache, "team/model", digest, data.size()).ok());
  CHECK(registry.Requests("GET", "/blobs/sha256:") == gets);  // cached: no request

  const std::string manifest_json =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
      R"("config":{"mediaType":"application/vnd.example+json","digest":"sha256:)" +
      manifest::ToHex(digest) + R"(","size":100000},"layers":[]})";
  auto put =
      client->PutManifest("team/model", "v1", kImageManifestMediaType, AsBytes(manifest_json));
  REQUIRE(put.ok());
  auto by_tag = client->GetManifest("team/model", "v1");
  REQUIRE(by_tag.ok());
  CHECK(by_tag->bytes == manifest_json);
  CHECK(by_tag->digest == *put);
  CHECK(by_tag->media_type == kImageManifestMediaType);
  auto by_digest = client->GetManifest("team/model", manifest::DigestString(*put));
  REQUIRE(by_digest.ok());
  CHECK(by_digest->bytes == manifest_json);

  auto missing = client->GetManifest("team/model", "nope");
  RequireFailure(missing.status(), StatusCode::kNotFound,
                 registry.host() +
                     "/team/model: manifest nope: not found: http status 404 "
                     "(MANIFEST_UNKNOWN: manifest unknown)");
  missing = client->GetManifest("no/such/repo", "v1");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  auto no_blob = client->FetchBlob(cache, "team/model", wrong, 5);
  CHECK(no_blob.status().code() == StatusCode::kNetworkError);  // 404 from the blob GET
  CHECK_FALSE(cache.Get(wrong).ok());
}

TEST_CASE("oci: large blobs go up in chunks", "[oci][registry]") {
  RegistryServer registry;
  Environment o = Quick();
  auto client = Open(registry, o, {.credentials = {}, .chunk_size = 64 << 10});
  const std::string data = Blob(300'000, 2);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));
  auto pushed = client->PushBlob("chunks", digest, AsBytes(data));
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kUploaded);
  CHECK(registry.Requests("PATCH", "/v2/chunks/blobs/uploads/") == 5);  // 4 x 64 KiB + the rest
  CHECK(registry.Requests("PUT", "digest=sha256%3A" + manifest::ToHex(digest)) == 1);
  TempDir dir;
  auto path = client->FetchBlob(links::BlobCache(dir.file("cache")), "chunks", digest, data.size());
  REQUIRE(path.ok());
  CHECK(carton::testing::ReadText(*path) == data);
}

TEST_CASE("oci: a chunk lost with its connection is sent again where the upload stands",
          "[oci][registry]") {
  RegistryServer registry;
  DroppingProxy proxy(registry.host(), 0, 0, /*drop_patch=*/2);
  Environment o = Quick();
  auto client = Client::Open(proxy.host(), o, {.credentials = {}, .chunk_size = 64 << 10});
  REQUIRE(client.ok());
  const std::string data = Blob(300'000, 12);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));
  auto pushed = (*client)->PushBlob("resume", digest, AsBytes(data));
  INFO(pushed.status().ToString());
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kUploaded);
  CHECK(proxy.PatchDrops() == 1);
  // The registry had moved past the state the client held, so it refused
  // to resume that session (a status request, answered 404): the blob went
  // up again in a new one.
  CHECK(registry.Requests("GET", "/v2/resume/blobs/uploads/") == 1);
  CHECK(registry.Requests("POST", "/v2/resume/blobs/uploads/") == 2);
  CHECK(registry.Requests("PUT", "digest=sha256%3A" + manifest::ToHex(digest)) == 1);
  TempDir dir;
  auto path = Open(registry, Quick())
                  ->FetchBlob(links::BlobCache(dir.file("c")), "resume", digest, data.size());
  REQUIRE(path.ok());
  CHECK(carton::testing::ReadText(*path) == data);
}

TEST_CASE("oci: a chunk the registry did not take is sent again where the upload stands",
          "[oci][registry]") {
  RegistryServer registry;
  DroppingProxy proxy(registry.host(), 0, 0, /*drop_patch=*/-3);
  Environment o = Quick();
  auto client = Client::Open(proxy.host(), o, {.credentials = {}, .chunk_size = 64 << 10});
  REQUIRE(client.ok());
  const std::string data = Blob(300'000, 13);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));
  auto pushed = (*client)->PushBlob("resume", digest, AsBytes(data));
  INFO(pushed.status().ToString());
  REQUIRE(pushed.ok());
  CHECK(proxy.PatchDrops() == 1);
  // One session: a status request, then the third chunk again and the rest.
  CHECK(registry.Requests("POST", "/v2/resume/blobs/uploads/") == 1);
  CHECK(registry.Requests("GET", "/v2/resume/blobs/uploads/") == 1);
  CHECK(registry.Requests("PATCH", "/v2/resume/blobs/uploads/") == 5);
  TempDir dir;
  auto path = Open(registry, Quick())
                  ->FetchBlob(links::BlobCache(dir.file("c")), "resume", digest, data.size());
  REQUIRE(path.ok());
  CHECK(carton::testing::ReadText(*path) == data);
}

TEST_CASE("oci: a blob known in another repository is mounted", "[oci][registry]") {
  RegistryServer registry;
  TempDir dir;
  Environment o = Quick();
  o.cache_dir = dir.file("cache");
  auto client = Open(registry, o);
  const std::string data = Blob(50'000, 3);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));
  REQUIRE(*client->PushBlob("team/a", digest, AsBytes(data)) == BlobPush::kUploaded);
  auto pushed = client->PushBlob("team/b", digest, AsBytes(data));
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kMounted);
  CHECK(registry.Requests("POST", "/v2/team/b/blobs/uploads/?mount=sha256%3A" +
                                      manifest::ToHex(digest) + "&from=team/a") == 1);
  CHECK(registry.Requests("PUT", "digest=sha256%3A" + manifest::ToHex(digest)) == 1);
  auto stat = client->StatBlob("team/b", digest);
  REQUIRE(stat.ok());
  CHECK(*stat);
}

TEST_CASE("oci: a blob whose bytes are wrong is refused and never cached", "[oci][registry]") {
  RegistryServer registry;
  TempDir dir;
  auto client = Open(registry, Quick());
  const std::string data = Blob(20'000, 4);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));
  REQUIRE(client->PushBlob("tamper", digest, AsBytes(data)).ok());
  std::string damaged = data;
  damaged[7] ^= 1;
  carton::testing::WriteBytes(registry.BlobDataPath(carton::manifest::ToHex(digest)),
                              AsBytes(damaged));
  links::BlobCache cache(dir.file("cache"));
  auto path = client->FetchBlob(cache, "tamper", digest, data.size());
  REQUIRE_FALSE(path.ok());
  RequireFailure(path.status(), StatusCode::kCorrupt,
                 ": sha256 is " + manifest::ToHex(manifest::Sha256Of(AsBytes(damaged))) +
                     ", expected " + manifest::ToHex(digest));
  CHECK_FALSE(cache.Get(digest).ok());
  CHECK_FALSE(std::filesystem::exists(cache.BlobPath(digest)));
}

TEST_CASE("oci: a download cut off is retried, then reported", "[oci][registry]") {
  RegistryServer registry;
  TempDir dir;
  const std::string data = Blob(200'000, 5);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));
  REQUIRE(Open(registry, Quick())->PushBlob("drop", digest, AsBytes(data)).ok());
  {
    DroppingProxy once(registry.host(), 1);
    auto client = Client::Open(once.host(), Quick());
    REQUIRE(client.ok());
    auto path = (*client)->FetchBlob(links::BlobCache(dir.file("a")), "drop", digest, data.size());
    REQUIRE(path.ok());
    CHECK(carton::testing::ReadText(*path) == data);
    CHECK(once.Drops() == 1);
    // The second request resumes where the first was cut off.
    CHECK(once.BlobGets() == 2);
  }
  DroppingProxy always(registry.host(), -1);
  auto client = Client::Open(always.host(), Quick());
  REQUIRE(client.ok());
  links::BlobCache cache(dir.file("b"));
  auto path = (*client)->FetchBlob(cache, "drop", digest, data.size());
  REQUIRE_FALSE(path.ok());
  RequireFailure(path.status(), StatusCode::kNetworkError, "(after 2 attempts)");
  CHECK(always.BlobGets() == 2);
  CHECK_FALSE(cache.Get(digest).ok());
}

TEST_CASE("oci: htpasswd basic auth", "[oci][registry][auth]") {
  RegistryOptions ro;
  ro.auth = RegistryOptions::Auth::kBasic;
  RegistryServer registry(ro);
  const std::string data = Blob(10'000, 6);
  const manifest::Digest digest = manifest::Sha256Of(AsBytes(data));

  Environment o = Quick();
  o.registry_config = registry.WriteDockerConfig();
  auto client = Open(registry, o);
  auto pushed = client->PushBlob("private/model", digest, AsBytes(data));
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kUploaded);
  TempDir dir;
  REQUIRE(
      client->FetchBlob(links::BlobCache(dir.file("cache")), "private/model", digest, data.size())
          .ok());

  o.registry_config = registry.WriteDockerConfig("wrong");
  auto denied = Open(registry, o)->GetManifest("private/model", "v1");
  RequireFailure(denied.status(), StatusCode::kNetworkError,
                 "access denied: http status 401 (UNAUTHORIZED: authentication required) (with "
                 "the credentials configured for " +
                     registry.host() + ")");

  auto r = Open(registry, Quick())->GetManifest("private/model", "v1");
  RequireFailure(r.status(), StatusCode::kNetworkError,
                 "the registry asks for credentials (http status 401 (UNAUTHORIZED: "
                 "authentication required)) and none are configured for " +
                     registry.host());
}

TEST_CASE("oci: the bearer token flow, tokens reused until they expire", "[oci][registry][auth]") {
  RegistryOptions ro;
  ro.auth = RegistryOptions::Auth::kToken;
  ro.token_seconds = 6;
  RegistryServer registry(ro);
  Environment o = Quick();
  o.registry_config = registry.WriteDockerConfig();
  auto client = Open(registry, o);

  std::vector<std::string> blobs;
  for (int i = 0; i < 4; ++i) blobs.push_back(Blob(5'000 + i, 7 + i));
  for (const std::string& b : blobs) {
    auto pushed = client->PushBlob("team/model", manifest::Sha256Of(AsBytes(b)), AsBytes(b));
    REQUIRE(pushed.ok());
    CHECK(*pushed == BlobPush::kUploaded);
  }
  // One token (pull and push on the repository) served every request.
  CHECK(client->stats().tokens_fetched == 1);
  CHECK(registry.TokensIssued() == 1);

  // Renewed once it is about to expire (6 s, renewed 3 s early).
  std::this_thread::sleep_for(std::chrono::milliseconds(3200));
  auto again =
      client->PushBlob("team/model", manifest::Sha256Of(AsBytes(blobs[0])), AsBytes(blobs[0]));
  REQUIRE(again.ok());
  CHECK(*again == BlobPush::kPresent);
  CHECK(client->stats().tokens_fetched == 2);

  // Pulling needs a token of its own scope.
  TempDir dir;
  auto path = client->FetchBlob(links::BlobCache(dir.file("cache")), "team/model",
                                manifest::Sha256Of(AsBytes(blobs[1])), blobs[1].size());
  REQUIRE(path.ok());
  CHECK(client->stats().tokens_fetched == 3);

  o.registry_config = registry.WriteDockerConfig("wrong");
  auto denied = Open(registry, o)->StatBlob("team/model", manifest::Sha256Of(AsBytes(blobs[0])));
  RequireFailure(denied.status(), StatusCode::kNetworkError,
                 "refused the credentials for " + registry.host() +
                     ": http status 401 ({\"details\":\"incorrect username or password\"})");
  CHECK(registry.TokensRefused() == 1);

  // Anonymous callers get pull only: a push is refused by the registry.
  auto anonymous = Open(registry, Quick());
  const std::string extra = Blob(1'000, 20);
  auto refused =
      anonymous->PushBlob("team/model", manifest::Sha256Of(AsBytes(extra)), AsBytes(extra));
  RequireFailure(refused.status(), StatusCode::kNetworkError, "access denied: http status 401");
}

TEST_CASE("oci: a token the registry stops honouring early is renewed once, and work goes on",
          "[oci][registry][auth]") {
  // The token server says 300 s; the registry refuses each token after 6 s
  // (as it would a revoked one): the next request is answered 401 while
  // the client still holds the token.
  RegistryOptions ro;
  ro.auth = RegistryOptions::Auth::kToken;
  ro.token_honoured_seconds = 6;
  RegistryServer registry(ro);
  Environment o = Quick();
  o.registry_config = registry.WriteDockerConfig();
  auto client = Open(registry, o);
  TempDir dir;
  const links::BlobCache cache(dir.file("cache"));

  std::vector<std::string> blobs;
  for (int i = 0; i < 5; ++i) blobs.push_back(Blob(300'000 + i, 30 + i));
  auto digest = [&](int i) { return manifest::Sha256Of(AsBytes(blobs[i])); };
  for (int i = 0; i < 3; ++i) {
    REQUIRE(client->PushBlob("team/model", digest(i), AsBytes(blobs[i])).ok());
  }
  auto first = client->FetchBlob(cache, "team/model", digest(0), blobs[0].size());
  REQUIRE(first.ok());
  REQUIRE(client->stats().tokens_fetched == 2);  // push, then pull scope

  // A later blob: its download is refused (401), the token renewed once,
  // the download done.
  std::this_thread::sleep_for(std::chrono::milliseconds(6500));
  auto later = client->FetchBlob(cache, "team/model", digest(1), blobs[1].size());
  INFO((later.ok() ? std::string() : later.status().ToString()));
  REQUIRE(later.ok());
  CHECK(testing::ReadText(*later) == blobs[1]);
  CHECK(client->stats().tokens_fetched == 3);

  // A streamed download, after the renewed token ran out in turn.
  std::this_thread::sleep_for(std::chrono::milliseconds(6500));
  StringSink sink;
  Status streamed = client->FetchBlobToStream("team/model", digest(2), blobs[2].size(), sink);
  INFO(streamed.ToString());
  REQUIRE(streamed.ok());
  CHECK(sink.bytes == blobs[2]);
  CHECK(client->stats().tokens_fetched == 4);
  CHECK_FALSE(cache.Get(digest(2)).ok());  // a stream never reaches the cache

  // A push with the first token (long refused): its HEAD gets the 401 and
  // one new token, and the upload goes on.
  auto pushed = client->PushBlob("team/model", digest(3), AsBytes(blobs[3]));
  INFO((pushed.ok() ? std::string() : pushed.status().ToString()));
  REQUIRE(pushed.ok());
  CHECK(*pushed == BlobPush::kUploaded);
  CHECK(client->stats().tokens_fetched == 5);
  auto stat = client->StatBlob("team/model", digest(3));
  REQUIRE(stat.ok());
  CHECK(stat->value_or(0) == blobs[3].size());
  CHECK(registry.TokensIssued() == 5);
}

TEST_CASE("oci: a token that cannot be renewed, or is refused again, ends the download",
          "[oci][registry][auth]") {
  TempDir dir;
  {
    // The token server is gone when the registry stops honouring the
    // token: the download fails naming the token realm; nothing cached.
    RegistryOptions ro;
    ro.auth = RegistryOptions::Auth::kToken;
    ro.token_honoured_seconds = 3;
    RegistryServer registry(ro);
    Environment o = Quick();
    o.registry_config = registry.WriteDockerConfig();
    auto client = Open(registry, o);
    const links::BlobCache cache(dir.file("c1"));
    const std::string a = Blob(200'000, 40), b = Blob(200'000, 41);
    REQUIRE(client->PushBlob("team/model", manifest::Sha256Of(AsBytes(a)), AsBytes(a)).ok());
    REQUIRE(client->PushBlob("team/model", manifest::Sha256Of(AsBytes(b)), AsBytes(b)).ok());
    REQUIRE(client->FetchBlob(cache, "team/model", manifest::Sha256Of(AsBytes(a)), a.size()).ok());
    registry.StopTokenServer();
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    auto r = client->FetchBlob(cache, "team/model", manifest::Sha256Of(AsBytes(b)), b.size());
    RequireFailure(r.status(), StatusCode::kNetworkError, "/token");
    CHECK_FALSE(cache.Get(manifest::Sha256Of(AsBytes(b))).ok());
    StringSink sink;
    Status streamed =
        client->FetchBlobToStream("team/model", manifest::Sha256Of(AsBytes(b)), b.size(), sink);
    RequireFailure(streamed, StatusCode::kNetworkError, "/token");
    CHECK(sink.bytes.empty());
  }
  {
    // Tokens the registry never honours: one new token per request, then
    // the registry's refusal, not a loop.
    RegistryOptions ro;
    ro.auth = RegistryOptions::Auth::kToken;
    ro.token_honoured_seconds = -100;
    RegistryServer registry(ro);
    Environment o = Quick();
    o.registry_config = registry.WriteDockerConfig();
    auto client = Open(registry, o);
    const std::string a = Blob(1'000, 42);
    auto r = client->FetchBlob(links::BlobCache(dir.file("c2")), "team/model",
                               manifest::Sha256Of(AsBytes(a)), a.size());
    RequireFailure(r.status(), StatusCode::kNetworkError, "access denied: http status 401");
    CHECK(client->stats().tokens_fetched == 1);
    CHECK(registry.TokensIssued() == 1);
  }
}

}  // namespace
}  // namespace carton::oci
