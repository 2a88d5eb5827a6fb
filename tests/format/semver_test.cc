#include "carton/format/semver.h"

#include <catch2/catch.hpp>
#include <string>

using namespace carton;

namespace {

Version V(const std::string& text) {
  Result<Version> v = ParseVersion(text);
  INFO(text << ": " << v.status().ToString());
  REQUIRE(v.ok());
  return *v;
}

VersionReq Req(const std::string& text) {
  Result<VersionReq> r = VersionReq::Parse(text);
  INFO(text << ": " << r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

bool Matches(const std::string& req, const std::string& version) {
  return Req(req).Matches(V(version));
}

}  // namespace

TEST_CASE("carton semver: parses strict versions", "[semver]") {
  Version v = V("1.12.1");
  CHECK(v.major == 1);
  CHECK(v.minor == 12);
  CHECK(v.patch == 1);
  CHECK(v.prerelease.empty());

  v = V("2.0.0-rc.1+build.5");
  CHECK(v.prerelease == "rc.1");
  CHECK(v.build == "build.5");
  CHECK(v.ToString() == "2.0.0-rc.1+build.5");
  CHECK(V("0.0.0").ToString() == "0.0.0");
  CHECK(V("18446744073709551615.0.0").major == UINT64_MAX);

  for (const char* bad :
       {"", "1", "1.13", "1.2.3.4", "01.2.3", "1.02.3", "1.2.3-", "1.2.3+", "1.2.3-01",
        "1.2.3-a..b", "v1.2.3", " 1.2.3", "1.2.3 ", "1.2.x", "18446744073709551616.0.0"}) {
    Result<Version> r = ParseVersion(bad);
    INFO(bad);
    CHECK_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(ParseVersion("1.13").status().message() ==
        "invalid version: unexpected end of input while parsing minor version "
        "number");
  CHECK(ParseVersion("1.2.3.4").status().message() ==
        "invalid version: unexpected character '.' after patch version number");
}

TEST_CASE("carton semver: orders versions by precedence", "[semver]") {
  const char* ascending[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                             "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                             "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                             "1.1.0",       "2.0.0"};
  for (std::size_t i = 0; i + 1 < std::size(ascending); ++i) {
    INFO(ascending[i] << " < " << ascending[i + 1]);
    CHECK(CompareVersions(V(ascending[i]), V(ascending[i + 1])) < 0);
    CHECK(CompareVersions(V(ascending[i + 1]), V(ascending[i])) > 0);
  }
  CHECK(CompareVersions(V("1.0.0+a"), V("1.0.0+b")) == 0);
}

TEST_CASE("carton semver: exact requirement", "[semver]") {
  CHECK(Matches("=1.12.1", "1.12.1"));
  CHECK_FALSE(Matches("=1.12.1", "1.12.2"));
  CHECK_FALSE(Matches("=1.12.1", "1.12.0"));
  CHECK_FALSE(Matches("=1.12.1", "1.13.1"));
  CHECK_FALSE(Matches("=1.12.1", "1.12.1-rc.1"));
  CHECK(Matches("=1.12", "1.12.7"));
  CHECK(Matches("=1", "1.99.0"));
  CHECK_FALSE(Matches("=1", "2.0.0"));
}

TEST_CASE("carton semver: ranges", "[semver]") {
  CHECK(Matches(">=2, <3", "2.0.0"));
  CHECK(Matches(">=2, <3", "2.9.9"));
  CHECK_FALSE(Matches(">=2, <3", "3.0.0"));
  CHECK_FALSE(Matches(">=2, <3", "1.13.1"));
  CHECK(Matches(">=1.12, <2", "1.13.1"));
  CHECK_FALSE(Matches(">=2.0.0", "1.13.1"));
  CHECK(Matches(">=2.0.0", "2.0.0"));
  CHECK(Matches(">1.2", "1.3.0"));
  CHECK_FALSE(Matches(">1.2", "1.2.9"));
  CHECK(Matches("<=1.2", "1.2.9"));
  CHECK_FALSE(Matches("<1.2", "1.2.0"));
  CHECK(Matches("<1.2", "1.1.9"));
  CHECK(Matches(">1.2.3", "1.2.4"));
  CHECK_FALSE(Matches(">1.2.3", "1.2.3"));
}

TEST_CASE("carton semver: caret and bare versions", "[semver]") {
  CHECK(Matches("^1.2", "1.2.0"));
  CHECK(Matches("^1.2", "1.99.3"));
  CHECK_FALSE(Matches("^1.2", "2.0.0"));
  CHECK_FALSE(Matches("^1.2", "1.1.9"));
  CHECK(Matches("^1.13", "1.13.1"));
  CHECK(Matches("^0.2.3", "0.2.3"));
  CHECK(Matches("^0.2.3", "0.2.9"));
  CHECK_FALSE(Matches("^0.2.3", "0.3.0"));
  CHECK_FALSE(Matches("^0.2.3", "0.2.2"));
  CHECK(Matches("^0.0.3", "0.0.3"));
  CHECK_FALSE(Matches("^0.0.3", "0.0.4"));
  CHECK(Matches("^0", "0.9.0"));
  CHECK(Matches("1.2.3", "1.9.0"));  // bare = caret
  CHECK_FALSE(Matches("1.2.3", "1.2.2"));
  CHECK(Req("1.2.3") == Req("^1.2.3"));
}

TEST_CASE("carton semver: tilde", "[semver]") {
  CHECK(Matches("~1.2", "1.2.0"));
  CHECK(Matches("~1.2", "1.2.99"));
  CHECK_FALSE(Matches("~1.2", "1.3.0"));
  CHECK(Matches("~1.2.3", "1.2.5"));
  CHECK_FALSE(Matches("~1.2.3", "1.2.2"));
  CHECK(Matches("~1", "1.5.0"));
  CHECK_FALSE(Matches("~1", "2.0.0"));
}

TEST_CASE("carton semver: wildcards", "[semver]") {
  for (const char* star : {"*", "x", "X", "  *  "}) {
    CHECK(Req(star).comparators().empty());
    CHECK(Req(star).Matches(V("0.0.1")));
    CHECK(Req(star).Matches(V("99.1.2")));
    CHECK_FALSE(Req(star).Matches(V("1.0.0-alpha")));
  }
  CHECK(Matches("1.*", "1.7.3"));
  CHECK_FALSE(Matches("1.*", "2.0.0"));
  CHECK(Matches("1.2.*", "1.2.8"));
  CHECK(Matches("1.2.x", "1.2.8"));
  CHECK_FALSE(Matches("1.2.*", "1.3.0"));
  CHECK(Matches("1.*.*", "1.3.0"));
}

TEST_CASE("carton semver: prereleases need an opted-in comparator", "[semver]") {
  CHECK_FALSE(Matches(">=1.0.0", "1.1.0-alpha"));
  CHECK_FALSE(Matches("^1.2", "1.3.0-beta"));
  CHECK(Matches(">=1.2.3-alpha", "1.2.3-beta"));
  CHECK(Matches(">=1.2.3-alpha", "1.2.3"));
  CHECK(Matches(">=1.2.3-alpha", "1.5.0"));
  CHECK_FALSE(Matches(">=1.2.3-alpha", "1.2.4-alpha"));
  CHECK(Matches("=1.2.3-rc.1", "1.2.3-rc.1"));
  CHECK_FALSE(Matches("=1.2.3-rc.1", "1.2.3"));
  CHECK(Matches("^1.2.3-rc.1", "1.2.3-rc.2"));
  CHECK_FALSE(Matches("^1.2.3-rc.2", "1.2.3-rc.1"));
  CHECK(Matches(">1.2.3-alpha, <1.2.3", "1.2.3-beta"));
}

TEST_CASE("carton semver: ignores build metadata when matching", "[semver]") {
  CHECK(Matches("=1.2.3+build.1", "1.2.3+other"));
  CHECK(Matches("=1.2.3", "1.2.3+other"));
}

TEST_CASE("carton semver: formats requirements canonically", "[semver]") {
  CHECK(Req("=1.12.1").ToString() == "=1.12.1");
  CHECK(Req(">=2,<3").ToString() == ">=2, <3");
  CHECK(Req(" >= 1.2 ,  < 2 ").ToString() == ">=1.2, <2");
  CHECK(Req("1.2.3").ToString() == "^1.2.3");
  CHECK(Req("1.*").ToString() == "1.*");
  CHECK(Req("1.2.x").ToString() == "1.2.*");
  CHECK(Req("*").ToString() == "*");
  CHECK(Req("~1.2.3-rc.1+b").ToString() == "~1.2.3-rc.1");
  for (const char* text : {">=2, <3", "^0.2.3", "~1.2", "1.2.*", "=1.2.3-alpha.1", "<=4"}) {
    VersionReq r = Req(text);
    CHECK(Req(r.ToString()) == r);
  }
}

TEST_CASE("carton semver: rejects invalid requirements", "[semver]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "unexpected end of input while parsing major version number"},
      {">=", "unexpected end of input while parsing major version number"},
      {"1.2.3.4", "expected comma after patch version number, found '.'"},
      {"=>1", "unexpected character '>' while parsing major version number"},
      {"^a", "unexpected character 'a' while parsing major version number"},
      {">= 1, ", "unexpected end of input while parsing major version number"},
      {"1.2.3 2.0.0", "expected comma after patch version number, found '2'"},
      {"*, 1.2", "wildcard * must be the only comparator"},
      {"1.2, *", "wildcard * must be the only comparator"},
      {"* 1", "unexpected character '1' after wildcard"},
      {"1.*.3", "unexpected character '3' after wildcard"},
      {"1.*.", "unexpected end of input after wildcard"},
      {">=*", "unexpected character '*' while parsing major version number"},
      {"01.2", "invalid leading zero in major version number"},
      {"1.2.3-", "empty identifier segment in pre-release identifier"},
      {"1.2.3-01", "invalid leading zero in pre-release identifier"},
      {"99999999999999999999", "major version number is too large"},
      {"~>1.2", "unexpected character '>' while parsing major version number"},
      {"1.2.3\t", "expected comma after patch version number, found byte 0x09"},
  };
  for (const Case& c : cases) {
    Result<VersionReq> r = VersionReq::Parse(c.text);
    INFO("requirement: \"" << c.text << "\"");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message() == std::string("invalid version requirement: ") + c.message);
  }
}

TEST_CASE("carton semver: limits the number of comparators", "[semver]") {
  std::string text = ">=1";
  for (std::size_t i = 1; i < VersionReq::kMaxComparators; ++i) text += ", >=1";
  CHECK(VersionReq::Parse(text).ok());
  text += ", >=1";
  Result<VersionReq> r = VersionReq::Parse(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("more than 32 comparators") != std::string::npos);
}

TEST_CASE("carton semver: pip's == gets a hint for =", "[semver]") {
  Result<VersionReq> r = VersionReq::Parse("==1.13.1");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("unexpected character '='"));
  CHECK_THAT(r.status().message(), Catch::Contains("(use =1.13.1: "));
  // Other mistakes get no such hint.
  r = VersionReq::Parse("=>1");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), !Catch::Contains("use ="));
  CHECK(VersionReq::Parse("=1.13.1").ok());
}
