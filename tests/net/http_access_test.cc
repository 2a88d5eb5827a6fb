// Where carton connects and which credentials it sends: the allowlist, the
// link-local and metadata rule (as a function on hosts and resolved
// addresses), per-host headers and netrc, checked on every redirect hop.
// End to end only over loopback: a server on 127.0.0.2 stands for a host
// that must not be reached.
#include "carton/net/http_access.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "carton/net/fetch.h"
#include "carton/net/http_source.h"
#include "http_server_testing.h"
#include "net/header_server_testing.h"
#include "testing.h"

namespace carton::net {
namespace {

using testing::HeaderServer;
using testing::Payload;
using testing::PayloadDigest;

FetchOptions Quick(HttpAccess access) {
  FetchOptions o;
  o.attempts_per_url = 1;
  o.show_progress = false;
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.access = std::move(access);
  return o;
}

HostPattern Pattern(std::string_view text) {
  auto p = ParseHostPattern(text);
  REQUIRE(p.ok());
  return *p;
}

std::string Escaped(const std::string& url) {
  std::string out;
  for (char c : url) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') {
      out += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("http access: refuses link-local and metadata targets by address and name",
          "[links][access]") {
  // As a URL names them, and as a resolver hands them to the socket guard.
  for (const char* host :
       {"169.254.169.254", "169.254.0.1", "169.254.255.255", "fe80::1", "[fe80::1]", "FE80::abcd:1",
        "febf::1", "fe80::1%eth0", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "fd00:ec2::254",
        "metadata.google.internal", "METADATA.google.internal.", "[::ffff:169.254.1.2]"}) {
    INFO(host);
    auto why = RefusedTarget(host);
    REQUIRE(why.has_value());
    CHECK((why->find("link-local") != std::string::npos ||
           why->find("metadata") != std::string::npos));
  }
  CHECK(*RefusedTarget("169.254.169.254") ==
        "169.254.169.254 is a link-local address (169.254.0.0/16)");
  CHECK(*RefusedTarget("fe80::1") == "fe80::1 is a link-local address (fe80::/10)");
  CHECK(*RefusedTarget("metadata.google.internal") ==
        "metadata.google.internal is a cloud metadata service");
  for (const char* host :
       {"127.0.0.1", "127.0.0.2", "10.0.0.1", "169.253.255.255", "169.255.0.1", "::1", "fec0::1",
        "fe7f::1", "fd00:ec2::253", "example.com", "metadata.google.internal.example.com",
        "::ffff:10.0.0.1", "localhost"}) {
    INFO(host);
    CHECK_FALSE(RefusedTarget(host).has_value());
  }
}

TEST_CASE("http access: checks urls before connecting, naming the url and the rule",
          "[links][access]") {
  HttpAccess none;
  Status s = CheckUrlAccess("http://169.254.169.254/latest/meta-data/", none);
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() ==
        "http://169.254.169.254/latest/meta-data/: refused: 169.254.169.254 is a link-local "
        "address (169.254.0.0/16); carton does not connect to link-local or cloud metadata "
        "targets unless CARTON_ALLOW_LINK_LOCAL=1");
  CHECK(CheckUrlAccess("http://[fe80::1]:8080/x", none).code() == StatusCode::kInvalidArgument);
  CHECK(CheckUrlAccess("http://metadata.google.internal/computeMetadata/v1/", none).code() ==
        StatusCode::kInvalidArgument);
  // libcurl's parser turns other spellings of an address into dotted form.
  CHECK(CheckUrlAccess("http://2852039166/latest", none).code() == StatusCode::kInvalidArgument);
  CHECK(CheckUrlAccess("http://0xa9.0xfe.0xa9.0xfe/latest", none).code() ==
        StatusCode::kInvalidArgument);
  CHECK(CheckUrlAccess("https://example.com/model.carton", none).ok());

  HttpAccess allow_link_local;
  allow_link_local.allow_link_local = true;
  CHECK(CheckUrlAccess("http://169.254.169.254/latest/meta-data/", allow_link_local).ok());

  HttpAccess list;
  list.allowed_hosts = {Pattern("models.example.com"), Pattern("*.cdn.example.com"),
                        Pattern("127.0.0.1:8080"), Pattern("[::1]")};
  CHECK(CheckUrlAccess("https://models.example.com/a", list).ok());
  CHECK(CheckUrlAccess("https://MODELS.example.com./a", list).ok());
  CHECK(CheckUrlAccess("https://eu.cdn.example.com/a", list).ok());
  CHECK(CheckUrlAccess("http://127.0.0.1:8080/a", list).ok());
  CHECK(CheckUrlAccess("http://[::1]:9/a", list).ok());
  Status refused = CheckUrlAccess("http://127.0.0.1:8081/a", list);
  REQUIRE(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message() ==
        "http://127.0.0.1:8081/a: refused: host 127.0.0.1 port 8081 is not in the allowed hosts "
        "(CARTON_ALLOWED_HOSTS: models.example.com, *.cdn.example.com, 127.0.0.1:8080, ::1)");
  CHECK_FALSE(CheckUrlAccess("https://cdn.example.com/a", list).ok());  // not a subdomain
  CHECK_FALSE(CheckUrlAccess("https://evil-models.example.com/a", list).ok());
  CHECK_FALSE(CheckUrlAccess("https://models.example.com.evil.org/a", list).ok());
  // The allowlist does not lift the link-local rule.
  list.allowed_hosts.push_back(Pattern("169.254.169.254"));
  CHECK_FALSE(CheckUrlAccess("http://169.254.169.254/", list).ok());
}

TEST_CASE("http access: host patterns", "[links][access]") {
  CHECK(ToString(Pattern("Example.COM")) == "example.com");
  CHECK(ToString(Pattern("*.example.com:443")) == "*.example.com:443");
  CHECK(ToString(Pattern("[::1]:5000")) == "[::1]:5000");
  CHECK(ToString(Pattern("::1")) == "::1");
  CHECK(ToString(Pattern("*")) == "*");
  CHECK(HostMatches(Pattern("*"), "anything.org", 1));
  CHECK(HostMatches(Pattern("*:443"), "anything.org", 443));
  CHECK_FALSE(HostMatches(Pattern("*:443"), "anything.org", 80));
  CHECK(HostMatches(Pattern("[::1]"), "0:0::1", 80));
  for (const char* bad : {"", "a:0", "a:65536", "a:x", "[::1", "[zz]", "*.", "a*b.com",
                          "ex ample.com", "1:2:3:q", "*.[::1]"}) {
    INFO(bad);
    auto p = ParseHostPattern(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::kInvalidArgument);
    CHECK(p.status().message().rfind("host pattern \"", 0) == 0);
  }
}

TEST_CASE("http access: header configuration lines", "[links][access]") {
  auto h = ParseHostHeaders(
      "# model hub\n"
      "hub.example.com Authorization: Bearer abc\n"
      "\n"
      "*.cdn.example.com:443   X-Api-Key: k=1\n");
  REQUIRE(h.ok());
  REQUIRE(h->size() == 2);
  CHECK((*h)[0].header == "Authorization: Bearer abc");
  CHECK(ToString((*h)[1].host) == "*.cdn.example.com:443");
  CHECK((*h)[1].header == "X-Api-Key: k=1");
  auto bad = ParseHostHeaders("a.com Authorization: x\nb.com NoColon\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "header configuration line 2: expected \"HOST-PATTERN Name: value\"");
  bad = ParseHostHeaders("a.com Bad Name: x\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("line 1: the header name \"Bad Name\"") != std::string::npos);
  bad = ParseHostHeaders("a:b:c X: y\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("line 1: host pattern") != std::string::npos);
}

TEST_CASE("http access: the environment configures it", "[links][access]") {
  carton::testing::TempDir dir;
  const std::string headers_file = dir.file("headers");
  carton::testing::WriteBytes(headers_file, AsBytes("127.0.0.1 Authorization: Bearer t\n"));
  {
    ScopedEnv hosts("CARTON_ALLOWED_HOSTS", "a.example.com, *.b.example.com 127.0.0.1:9");
    ScopedEnv link_local("CARTON_ALLOW_LINK_LOCAL", "1");
    ScopedEnv headers("CARTON_HTTP_HEADERS", "@" + headers_file);
    ScopedEnv netrc("CARTON_NETRC", "off");
    auto a = HttpAccessFromEnvironment();
    REQUIRE(a.ok());
    REQUIRE(a->allowed_hosts.size() == 3);
    CHECK(ToString(a->allowed_hosts[2]) == "127.0.0.1:9");
    CHECK(a->allow_link_local);
    REQUIRE(a->headers.size() == 1);
    CHECK(a->headers[0].header == "Authorization: Bearer t");
    CHECK_FALSE(a->use_netrc);
  }
  {
    ScopedEnv hosts("CARTON_ALLOWED_HOSTS", "good.com,bad:host:x");
    auto a = HttpAccessFromEnvironment();
    REQUIRE_FALSE(a.ok());
    CHECK(a.status().message().rfind("CARTON_ALLOWED_HOSTS: host pattern \"bad:host:x\"", 0) == 0);
  }
  {
    ScopedEnv link_local("CARTON_ALLOW_LINK_LOCAL", "maybe");
    CHECK(HttpAccessFromEnvironment().status().message() ==
          "CARTON_ALLOW_LINK_LOCAL: \"maybe\" is not 1 or 0");
  }
  {
    ScopedEnv headers("CARTON_HTTP_HEADERS", "@" + dir.file("missing"));
    CHECK(HttpAccessFromEnvironment().status().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("http access: an allowlist refuses a url before any connection", "[links][access]") {
  HeaderServer elsewhere("127.0.0.2");
  carton::testing::TempDir dir;
  HttpAccess access;
  access.allowed_hosts = {Pattern("127.0.0.1")};
  Status s =
      FetchToFile({elsewhere.Url("/file")}, PayloadDigest(), 0, dir.file("blob"), Quick(access));
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find(elsewhere.Url("/file") + ": refused: host 127.0.0.2 port ") !=
        std::string::npos);
  CHECK(s.message().find("is not in the allowed hosts (CARTON_ALLOWED_HOSTS: 127.0.0.1)") !=
        std::string::npos);
  HttpSourceOptions range;
  range.fetch = Quick(access);
  auto source = HttpRangeSource::Open(elsewhere.Url("/file"), range);
  REQUIRE_FALSE(source.ok());
  CHECK(source.status().code() == StatusCode::kInvalidArgument);
  CHECK(elsewhere.Requests().empty());

  // The same URL is fetched once the host is allowed.
  access.allowed_hosts.push_back(Pattern("127.0.0.2"));
  REQUIRE(FetchToFile({elsewhere.Url("/file")}, PayloadDigest(), 0, dir.file("blob"), Quick(access))
              .ok());
  CHECK(elsewhere.Requests().size() == 1);
}

TEST_CASE("http access: a redirect to a host the allowlist refuses is not followed",
          "[links][access]") {
  HeaderServer origin("127.0.0.1");
  HeaderServer elsewhere("127.0.0.2");
  carton::testing::TempDir dir;
  HttpAccess access;
  access.allowed_hosts = {Pattern("127.0.0.1")};
  const std::string url = origin.Url("/redirect?to=" + Escaped(elsewhere.Url("/file")));
  Status s = FetchToFile({url}, PayloadDigest(), 0, dir.file("blob"), Quick(access));
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find(url + ": redirect to " + elsewhere.Url("/file") +
                         ": refused: host 127.0.0.2") != std::string::npos);
  CHECK(origin.Requests().size() == 1);
  CHECK(elsewhere.Requests().empty());
  CHECK(carton::testing::ListDir(dir.path()).empty());
}

TEST_CASE("http access: credentials never follow a redirect to another host",
          "[links][access][credentials]") {
  HeaderServer origin("127.0.0.1");
  HeaderServer elsewhere("127.0.0.2");
  carton::testing::TempDir dir;
  const std::string netrc = dir.file("netrc");
  carton::testing::WriteBytes(netrc, AsBytes("machine 127.0.0.1 login alice password s3cret\n"
                                             "machine 127.0.0.2 login bob password other\n"));
  HttpAccess access;
  access.headers = *ParseHostHeaders("127.0.0.1 X-Hub-Token: hub-secret\n");
  access.netrc_file = netrc;
  access.use_netrc = true;
  FetchOptions o = Quick(access);
  o.headers = {"X-Registry-Token: origin-only"};
  const std::string url = origin.Url("/redirect?to=" + Escaped(elsewhere.Url("/file")));
  REQUIRE(FetchToFile({url}, PayloadDigest(), 0, dir.file("blob"), o).ok());
  CHECK(carton::testing::ReadText(dir.file("blob")) == Payload());

  // The origin got its header, the origin-only header and its netrc login.
  CHECK(origin.SawHeader("X-Hub-Token: hub-secret"));
  CHECK(origin.SawHeader("X-Registry-Token: origin-only"));
  CHECK(origin.SawHeader("Authorization: Basic YWxpY2U6czNjcmV0"));  // alice:s3cret
  // The other host got none of them: only its own netrc entry.
  REQUIRE(elsewhere.Requests().size() == 1);
  CHECK_FALSE(elsewhere.SawHeader("X-Hub-Token"));
  CHECK_FALSE(elsewhere.SawHeader("X-Registry-Token"));
  CHECK_FALSE(elsewhere.SawHeader("Authorization: Basic YWxpY2U6czNjcmV0"));
  CHECK(elsewhere.SawHeader("Authorization: Basic Ym9iOm90aGVy"));  // bob:other

  // A redirect to the same host keeps them.
  HeaderServer same("127.0.0.1");
  REQUIRE(FetchToFile({same.Url("/redirect?to=%2Ffile")}, PayloadDigest(), 0, dir.file("blob2"), o)
              .ok());
  REQUIRE(same.Requests().size() == 2);
  for (const auto& r : same.Requests()) {
    bool hub = false, registry = false;
    for (const auto& h : r.headers) {
      hub = hub || h == "X-Hub-Token: hub-secret";
      registry = registry || h == "X-Registry-Token: origin-only";
    }
    CHECK(hub);
    CHECK(registry);
  }
}

TEST_CASE("http access: no netrc when it is turned off", "[links][access][credentials]") {
  HeaderServer origin("127.0.0.1");
  carton::testing::TempDir dir;
  const std::string netrc = dir.file("netrc");
  carton::testing::WriteBytes(netrc, AsBytes("machine 127.0.0.1 login alice password s3cret\n"));
  HttpAccess access;
  access.netrc_file = netrc;
  access.use_netrc = false;
  REQUIRE(
      FetchToFile({origin.Url("/file")}, PayloadDigest(), 0, dir.file("blob"), Quick(access)).ok());
  CHECK_FALSE(origin.SawHeader("Authorization:"));
}

}  // namespace
}  // namespace carton::net
