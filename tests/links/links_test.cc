#include "carton/links/links.h"

#include <catch2/catch.hpp>
#include <string>

namespace carton::links {
namespace {

const std::string kHashA = "e550f6224a5133f597d823ab4590f369e0b20e3c6446488225fc6f7a372b9fe2";
const std::string kHashB = "712f4a7aa03b1ba5ac4e6c3ee90ec2ece4cc2f78470d7ef40dda9e96e356ad4a";

manifest::Digest D(const std::string& hex) { return *manifest::ParseHex(hex); }

// LINKS text with one entry whose value is `value`.
std::string WithValue(const std::string& value) {
  return "version = 1\n[urls]\n" + kHashA + " = " + value + "\n";
}

void RequireError(const Result<Links>& r, StatusCode code, const std::string& substring) {
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  CHECK(r.status().code() == code);
  CHECK_THAT(r.status().message(), Catch::Contains(substring));
}

TEST_CASE("links: parses the spec example", "[links][parse]") {
  auto r = ParseLinks("version = 1\n[urls]\n" + kHashA + " = [\"https://example.com/file\"]\n");
  REQUIRE(r.ok());
  REQUIRE(r->urls.size() == 1);
  CHECK(r->urls.at(D(kHashA)) == std::vector<std::string>{"https://example.com/file"});
}

TEST_CASE("links: keeps url order, accepts comments, every scheme and unknown keys",
          "[links][parse]") {
  const std::string text = "# mirrors\nversion = 1\nnote = \"ignored\"\n[urls]\n" + kHashB +
                           " = [\n  \"http://a.example/x\",  # first\n  \"HTTPS://b.example/y\",\n"
                           "  \"file:///srv/blobs/z\",\n]\n" +
                           kHashA + " = ['https://c.example/a.b.c.d.e.f/w?q=1#f']\n";
  auto r = ParseLinks(text);
  REQUIRE(r.ok());
  REQUIRE(r->urls.size() == 2);
  CHECK(r->urls.at(D(kHashB)) == std::vector<std::string>{"http://a.example/x",
                                                          "HTTPS://b.example/y",
                                                          "file:///srv/blobs/z"});
  CHECK(r->urls.at(D(kHashA)).size() == 1);
}

TEST_CASE("links: accepts an empty urls table", "[links][parse]") {
  auto r = ParseLinks("version = 1\n[urls]\n");
  REQUIRE(r.ok());
  CHECK(r->urls.empty());
}

TEST_CASE("links: writes sorted canonical text that round-trips", "[links][write]") {
  Links links;
  links.urls[D(kHashA)] = {"https://z.example/a", "http://y.example/\"q\"\\"};
  links.urls[D(kHashB)] = {"file:///tmp/b"};
  const std::string text = WriteLinks(links);
  CHECK(text == "version = 1\n\n[urls]\n" + kHashB + " = [\"file:///tmp/b\"]\n" + kHashA +
                    " = [\"https://z.example/a\", \"http://y.example/\\\"q\\\"\\\\\"]\n");
  auto back = ParseLinks(text);
  REQUIRE(back.ok());
  CHECK(*back == links);
  CHECK(WriteLinks(*back) == text);
  CHECK(WriteLinks(Links{}) == "version = 1\n\n[urls]\n");
}

TEST_CASE("links: rejects a missing or non-integer version", "[links][parse][corrupt]") {
  RequireError(ParseLinks("[urls]\n"), StatusCode::kCorrupt, "LINKS: missing version");
  RequireError(ParseLinks("version = \"1\"\n[urls]\n"), StatusCode::kCorrupt,
               "LINKS:1:11: version must be an integer");
  RequireError(ParseLinks("version = 1.0\n[urls]\n"), StatusCode::kCorrupt,
               "LINKS:1:11: version must be an integer");
}

TEST_CASE("links: reports an unknown version as unsupported", "[links][parse]") {
  RequireError(ParseLinks("version = 2\n[urls]\n"), StatusCode::kUnsupported,
               "LINKS:1:11: version 2 is not supported");
  RequireError(ParseLinks("version = 0\n[urls]\n"), StatusCode::kUnsupported, "version 0");
}

TEST_CASE("links: rejects a missing or mistyped urls table", "[links][parse][corrupt]") {
  RequireError(ParseLinks("version = 1\n"), StatusCode::kCorrupt, "LINKS: missing [urls] table");
  RequireError(ParseLinks("version = 1\n[url]\n"), StatusCode::kCorrupt, "missing [urls] table");
  RequireError(ParseLinks("version = 1\nurls = 3\n"), StatusCode::kCorrupt,
               "LINKS:2:8: urls must be a table");
}

TEST_CASE("links: rejects keys that are not lowercase sha256 hex", "[links][parse][corrupt]") {
  std::string upper = kHashA;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  RequireError(ParseLinks("version = 1\n[urls]\n" + upper + " = [\"https://a.example/x\"]\n"),
               StatusCode::kCorrupt, "LINKS:3:1: key \"E550F622");
  RequireError(ParseLinks("version = 1\n[urls]\nabc = [\"https://a.example/x\"]\n"),
               StatusCode::kCorrupt, "LINKS:3:1: key \"abc\" is not a sha256");
  RequireError(
      ParseLinks("version = 1\n[urls]\n  \"" + kHashA + "0\" = [\"https://a.example/x\"]\n"),
      StatusCode::kCorrupt, "LINKS:3:3: key");
}

TEST_CASE("links: rejects values that are not non-empty arrays of strings",
          "[links][parse][corrupt]") {
  RequireError(ParseLinks(WithValue("\"https://a.example/x\"")), StatusCode::kCorrupt,
               "LINKS:3:68: urls." + kHashA + " must be an array of url strings");
  RequireError(ParseLinks(WithValue("[]")), StatusCode::kCorrupt,
               "LINKS:3:68: urls." + kHashA + " lists no urls");
  RequireError(ParseLinks(WithValue("[\"https://a.example/x\", 7]")), StatusCode::kCorrupt,
               "LINKS:3:92: urls." + kHashA + "[1] must be a string");
  RequireError(ParseLinks(WithValue("[[\"https://a.example/x\"]]")), StatusCode::kCorrupt,
               "[0] must be a string");
  std::string many = "[";
  for (std::size_t i = 0; i <= kMaxUrlsPerHash; ++i) many += "\"https://a.example/x\",";
  RequireError(ParseLinks(WithValue(many + "]")), StatusCode::kCorrupt,
               "lists 65 urls, more than the limit of 64");
}

TEST_CASE("links: rejects urls with another scheme or a bad shape", "[links][parse][corrupt]") {
  RequireError(ParseLinks(WithValue("[\"ftp://a.example/x\"]")), StatusCode::kCorrupt,
               "LINKS:3:69: urls." + kHashA +
                   "[0]: url scheme \"ftp\" is not http, https or file: \"ftp://a.example/x\"");
  RequireError(ParseLinks(WithValue("[\"\"]")), StatusCode::kCorrupt, "[0]: url is empty");
  RequireError(ParseLinks(WithValue("[\"a.example/x\"]")), StatusCode::kCorrupt,
               "url has no scheme");
  RequireError(ParseLinks(WithValue("[\"https:a.example/x\"]")), StatusCode::kCorrupt,
               "url must have the form https://...");
  RequireError(ParseLinks(WithValue("[\"https:///x\"]")), StatusCode::kCorrupt, "url has no host");
  RequireError(ParseLinks(WithValue("[\"file://\"]")), StatusCode::kCorrupt,
               "file url has no path");
  RequireError(ParseLinks(WithValue("[\"https://a.example/x y\"]")), StatusCode::kCorrupt,
               "url contains whitespace or a control character");
  RequireError(ParseLinks(WithValue("[\"https://a.example/\\u0001\"]")), StatusCode::kCorrupt,
               "url contains whitespace or a control character: \"https://a.example/\\x01\"");
  RequireError(ParseLinks(WithValue("[\"javascript:alert(1)\"]")), StatusCode::kCorrupt,
               "url scheme \"javascript\" is not http, https or file");
  RequireError(
      ParseLinks(WithValue("[\"https://a.example/" + std::string(net::kMaxUrlLength, 'x') + "\"]")),
      StatusCode::kCorrupt, "more than the limit of 8192");
}

TEST_CASE("links: reports toml syntax errors with line and column", "[links][parse][corrupt]") {
  RequireError(ParseLinks("version = 1\n[urls]\n" + kHashA + " = [\"https://a.example/x\"\n"),
               StatusCode::kCorrupt, "LINKS:3:91: ");
  RequireError(ParseLinks("version = 1\nversion = 1\n[urls]\n"), StatusCode::kCorrupt, "LINKS:2:");
  RequireError(
      ParseLinks(WithValue("[\"https://a.example/x\"]") + kHashA + " = [\"https://b/\"]\n"),
      StatusCode::kCorrupt, "LINKS:4:");
  RequireError(ParseLinks("version = 1\n[urls]\n\xff = 1\n"), StatusCode::kCorrupt, "utf-8");
}

TEST_CASE("links: refuses text past the size limit", "[links][parse][corrupt]") {
  std::string text = "version = 1\n[urls]\n";
  text += "#" + std::string(kMaxLinksSize, 'x') + "\n";
  RequireError(ParseLinks(text), StatusCode::kCorrupt, "more than the limit of 16777216");
}

TEST_CASE("links: refuses a very long dotted key instead of overflowing the stack",
          "[links][parse][corrupt]") {
  std::string key = "a";
  for (int i = 0; i < 200000; ++i) key += ".a";
  RequireError(ParseLinks("version = 1\n" + key + " = 1\n[urls]\n"), StatusCode::kCorrupt,
               "LINKS:2:8: dotted key has more than 4 parts");
  RequireError(ParseLinks("version = 1\n[" + key + "]\n"), StatusCode::kCorrupt,
               "LINKS:2:9: dotted key has more than 4 parts");
  RequireError(ParseLinks("version = 1\nx = { " + key + " = 1 }\n"), StatusCode::kCorrupt,
               "dotted key has more than 4 parts");
  // Dots inside strings and comments, and in values, are not keys.
  auto ok = ParseLinks(
      "version = 1 # a.b.c.d.e.f\nf = 1.5\nt = 07:32:00.25\n"
      "s = '''x.y.z.w.v\n.a.b.c.d'''\n[urls]\n" +
      kHashA + " = [\"https://a.b.c.d.e.f.example/x.y.z\"]\n");
  REQUIRE(ok.ok());
  // Three parts are still allowed by the screen (toml++ handles them).
  CHECK(ParseLinks("version = 1\na.b.c = 1\n[urls]\n").ok());
}

}  // namespace
}  // namespace carton::links
