#include "carton/carton/location.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "carton/carton/info.h"
#include "carton/carton/reader.h"
#include "source_testing.h"
#include "testing.h"

using namespace carton;
using carton::testing::TempDir;

TEST_CASE("location: paths, URLs and oci:// references are told apart once", "[carton][location]") {
  TempDir tmp;
  const std::string dir = tmp.path().string();
  const std::string file = dir + "/m.carton";
  std::ofstream(file) << "x";

  auto f = Location::Parse(file);
  REQUIRE(f.ok());
  CHECK(f->kind() == Location::Kind::kPath);
  CHECK(f->text() == file);
  CHECK_FALSE(f->is_remote());
  auto missing = Location::Parse(dir + "/not-yet.carton");
  REQUIRE(missing.ok());
  CHECK(missing->kind() == Location::Kind::kPath);
  // Parsing never looks at the file system: a directory is a path too,
  // and its source is the one that finds it is a directory.
  auto d = Location::Parse(dir);
  REQUIRE(d.ok());
  CHECK(d->kind() == Location::Kind::kPath);
  CHECK(testing::SourceFor(*d)->directory() == dir);
  CHECK(testing::SourceFor(*f)->directory().empty());
  // A path that merely contains "https://" is a path.
  auto odd = Location::Parse("/tmp/https://x");
  REQUIRE(odd.ok());
  CHECK(odd->kind() == Location::Kind::kPath);

  for (const char* url : {"https://example.com/m.carton", "HTTP://example.com/m.carton"}) {
    auto u = Location::Parse(url);
    REQUIRE(u.ok());
    CHECK(u->kind() == Location::Kind::kUrl);
    CHECK(u->is_remote());
  }
  auto o = Location::Parse("OCI://127.0.0.1:5000/team/model:v1");
  REQUIRE(o.ok());
  CHECK(o->kind() == Location::Kind::kOci);
  CHECK(o->oci().registry == "127.0.0.1:5000");
  CHECK(o->oci().repository == "team/model");
  CHECK(o->oci().tag == "v1");
  CHECK(o->kind_name() == "an oci:// reference");
}

TEST_CASE("location: a bad reference, URL or scheme is refused with the rule",
          "[carton][location][errors]") {
  auto bad_ref = Location::Parse("oci://registry/Team/Model");
  REQUIRE_FALSE(bad_ref.ok());
  CHECK(bad_ref.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad_ref.status().message(), Catch::Contains("repository component \"Team\""));

  auto bad_url = Location::Parse("https://exa mple.com/m.carton");
  REQUIRE_FALSE(bad_url.ok());
  CHECK_THAT(bad_url.status().message(), Catch::Contains("whitespace"));

  auto ftp = Location::Parse("ftp://example.com/m.carton");
  REQUIRE_FALSE(ftp.ok());
  CHECK_THAT(ftp.status().message(), Catch::Contains("\"ftp\" is not a scheme carton reads"));

  auto empty = Location::Parse("");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("location: a string converts, and an operation reports its parse error",
          "[carton][location][errors]") {
  const Location loc = std::string("ftp://example.com/m.carton");
  CHECK_FALSE(loc.status().ok());
  auto source = OpenSource(loc, Environment{});
  REQUIRE_FALSE(source.ok());
  CHECK(source.status().message() == loc.status().message());
}

TEST_CASE("location: a directory is refused by name, by the operation that cannot read it",
          "[carton][location][errors]") {
  TempDir tmp;
  SourceOptions options;
  options.operation = "ls";
  auto dir = testing::SourceFor(tmp.path().string(), {}, options)->Reader(ReadScope::kEntries);
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.status().code() == StatusCode::kInvalidArgument);
  CHECK(dir.status().message() ==
        "ls takes a .carton file, an http(s) URL or an oci:// "
        "reference; " +
            tmp.path().string() + " is a directory");
  CHECK(testing::SourceFor(tmp.path().string())->Info().status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("location: a kind no source in the Environment reads is refused by name",
          "[carton][location][errors]") {
  // The OCI source is the OCI module's (oci::AddOciSource): an Environment
  // without it cannot read oci:// references.
  auto ref = OpenSource("oci://127.0.0.1:5000/m", Environment{});
  REQUIRE_FALSE(ref.ok());
  CHECK(ref.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(ref.status().message(),
             Catch::Contains("oci://127.0.0.1:5000/m: an oci:// reference needs its module's "
                             "source"));
}
