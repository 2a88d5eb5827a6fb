// The file list: names, ignore paths, and a directory compared with what
// was signed.
#include "carton/sign/files.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/sign/failure.h"
#include "sign_testing.h"

using namespace carton;
using namespace carton::testing;
using sign::Failure;
namespace fs = std::filesystem;

TEST_CASE("sign: resource names are relative paths without . or .. components", "[sign][files]") {
  for (const char* ok : {"a", "model/w.bin", "a b/c d", ".hidden/x", "é/ü", "x..y"}) {
    INFO(ok);
    CHECK(sign::ValidateResourceName(ok, "name").ok());
  }
  const std::pair<std::string, const char*> bad[] = {
      {"", "is empty"},
      {"/abs", "is an absolute path"},
      {"a//b", "empty component"},
      {"a/", "empty component"},
      {"./a", "\".\" component"},
      {"a/../b", "\"..\" component"},
      {"..", "\"..\" component"},
      {std::string("a\0b", 3), "holds a NUL byte"},
      {"\xff", "not valid UTF-8"},
      {std::string(5000, 'a'), "longer than 4096 bytes"}};
  for (const auto& [name, rule] : bad) {
    INFO(name);
    ExpectFailure(sign::ValidateResourceName(name, "resources[0].name"), StatusCode::kCorrupt,
                  Failure::kBadBundle, rule);
  }
}

TEST_CASE("sign: an ignore path leaves out itself and what lies below it", "[sign][files]") {
  const std::vector<std::string> ignore = {".git", "model.sig", "misc/cache"};
  CHECK(sign::IsIgnored(".git", ignore));
  CHECK(sign::IsIgnored(".git/HEAD", ignore));
  CHECK(sign::IsIgnored("misc/cache/a", ignore));
  CHECK_FALSE(sign::IsIgnored(".github", ignore));
  CHECK_FALSE(sign::IsIgnored("a/.git", ignore));
  CHECK_FALSE(sign::IsIgnored("model.sig2", ignore));
  CHECK_FALSE(sign::IsIgnored("misc/cached", ignore));
}

TEST_CASE("sign: files are compared with the signed list: tampered, missing, unlisted",
          "[sign][files]") {
  const auto d = [](const char* s) { return manifest::Sha256Of(AsBytes(s)); };
  const std::vector<sign::Resource> listed = {{"a", d("a")}, {"b", d("b")}, {"c", d("c")}};
  CHECK(sign::CompareFiles(listed, listed).empty());
  const std::vector<sign::Resource> present = {{"a", d("A")}, {"c", d("c")}, {"z", d("z")}};
  const auto problems = sign::CompareFiles(listed, present);
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].failure == Failure::kTamperedFile);
  CHECK(problems[0].path == "a");
  CHECK_THAT(problems[0].message,
             Catch::Contains("a: sha256 " + manifest::ToHex(d("A")) + " but the signature says " +
                             manifest::ToHex(d("a"))));
  CHECK(problems[1].failure == Failure::kMissingFile);
  CHECK(problems[1].message == "b: signed, but not there");
  CHECK(problems[2].failure == Failure::kUnlistedFile);
  CHECK_THAT(problems[2].message, Catch::Contains("z: not signed"));
  ExpectFailure(sign::ProblemsStatus(problems), StatusCode::kCorrupt, Failure::kTamperedFile,
                "a: sha256");
}

TEST_CASE("sign: a directory is hashed as the reference's files method lists it", "[sign][files]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/model/w.bin", "weights");
  WriteText(dir + "/a-b", "1");
  WriteText(dir + "/a/b", "2");
  WriteText(dir + "/.git/HEAD", "ref");
  WriteText(dir + "/.gitignore", "x");
  WriteText(dir + "/sub/.git", "kept: not top level");
  WriteText(dir + "/model.sig", "{}");
  sign::HashDirectoryOptions o;
  o.ignore_paths = {"model.sig"};
  auto files = sign::HashDirectory(dir, o);
  INFO(files.status().ToString());
  REQUIRE(files.ok());
  std::vector<std::string> names;
  for (const auto& f : *files) names.push_back(f.name);
  CHECK(names == std::vector<std::string>{"a/b", "a-b", "model/w.bin", "sub/.git"});
  CHECK((*files)[2].digest == manifest::Sha256Of(AsBytes("weights")));
}

TEST_CASE("sign: symlinks are refused unless allowed, and never lead out", "[sign][files]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/w.bin", "weights");
  WriteText(tmp.file("outside"), "secret");
  fs::create_symlink("w.bin", dir + "/link");
  auto refused = sign::HashDirectory(dir);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("\"link\": a symlink, and the signature does not allow symlinks"));
  sign::HashDirectoryOptions o;
  o.allow_symlinks = true;
  auto followed = sign::HashDirectory(dir, o);
  REQUIRE(followed.ok());
  REQUIRE(followed->size() == 2);
  CHECK((*followed)[0].digest == (*followed)[1].digest);
  fs::create_symlink(tmp.file("outside"), dir + "/escape");
  auto escape = sign::HashDirectory(dir, o);
  REQUIRE_FALSE(escape.ok());
  CHECK_THAT(escape.status().message(),
             Catch::Contains("\"escape\": a symlink out of the directory"));
  CHECK(sign::HashDirectory(tmp.file("none")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("sign: a FIFO in the directory is refused, not read", "[sign][files]") {
  TempDir tmp;
  const std::string dir = tmp.file("m");
  WriteText(dir + "/w.bin", "weights");
  REQUIRE(mkfifo((dir + "/pipe").c_str(), 0600) == 0);
  auto r = sign::HashDirectory(dir);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(),
             Catch::Contains("\"pipe\": not a regular file, directory or symlink"));
}
