#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/carton/info.h"
#include "carton/carton/links.h"
#include "carton/carton/pack.h"
#include "carton/carton/reader.h"
#include "carton/carton/verify.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/reader.h"
#include "carton_testing.h"
#include "source_testing.h"

using namespace carton;
namespace fs = std::filesystem;
using testing::MinimalFiles;
using testing::TempDir;

namespace {

std::string PackMinimal(const TempDir& tmp) {
  const std::string dir = tmp.file("model");
  testing::WriteTree(dir, MinimalFiles());
  auto r = Pack(dir, tmp.file("m.carton"), {});
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return tmp.file("m.carton");
}

manifest::Digest Sha(const std::string& text) { return manifest::Sha256Of(AsBytes(text)); }

}  // namespace

TEST_CASE("carton shrink: files named by sha256 leave the zip for the given urls",
          "[carton][shrink]") {
  TempDir tmp;
  const std::string in = PackMinimal(tmp);
  const manifest::Digest weights = Sha(MinimalFiles().at("model/model.bin"));
  ShrinkOptions options;
  options.urls[weights] = {"https://a.example/w", "https://b.example/w"};
  auto report = Shrink(*testing::SourceFor(in), tmp.file("s.carton"), options);
  INFO(report.status().ToString());
  REQUIRE(report.ok());
  CHECK(report->moved == std::vector<std::string>{"model/model.bin"});
  CHECK(report->blobs_written == 0);  // the blobs already live at the urls
  CHECK(report->manifest_hash == *testing::SourceFor(in)->ManifestHash());

  auto zip = ZipReader::Open(tmp.file("s.carton"));
  REQUIRE(zip.ok());
  CHECK(zip->Find("model/model.bin") == nullptr);
  CHECK(zip->Find("model/sub/vocab.txt") != nullptr);
  CartonReader reader = testing::OpenReader(tmp.file("s.carton"));
  REQUIRE(reader.ReadLinks().ok());
  REQUIRE(reader.links().has_value());
  CHECK(reader.links()->urls.at(weights) ==
        std::vector<std::string>{"https://a.example/w", "https://b.example/w"});
  // Every file still in the zip checks out, and the linked one is listed.
  auto verified = Verify(*testing::SourceFor(tmp.file("s.carton")));
  REQUIRE(verified.ok());
  for (const auto& p : verified->problems) INFO(p.where << ": " << p.message);
  CHECK(verified->ok());
}

TEST_CASE("carton shrink: a sha256 naming no movable file is refused, and nothing is written",
          "[carton][shrink]") {
  TempDir tmp;
  const std::string in = PackMinimal(tmp);
  ShrinkOptions unknown;
  unknown.urls[Sha("no such file")] = {"https://a.example/x"};
  auto r = Shrink(*testing::SourceFor(in), tmp.file("s.carton"), unknown);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("names no file of"));
  CHECK_FALSE(fs::exists(tmp.file("s.carton")));

  // carton.toml is metadata `carton info` reads: it always stays.
  ShrinkOptions config;
  config.urls[Sha(MinimalFiles().at("carton.toml"))] = {"https://a.example/c"};
  r = Shrink(*testing::SourceFor(in), tmp.file("s.carton"), config);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("always stay"));
  CHECK_FALSE(fs::exists(tmp.file("s.carton")));
}

TEST_CASE("carton shrink: urls LINKS cannot hold are refused, and nothing is written",
          "[carton][shrink]") {
  TempDir tmp;
  const std::string in = PackMinimal(tmp);
  ShrinkOptions options;
  options.urls[Sha(MinimalFiles().at("model/model.bin"))] = {"ftp://a.example/w"};
  auto r = Shrink(*testing::SourceFor(in), tmp.file("s.carton"), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("LINKS cannot hold these urls"));
  CHECK_FALSE(fs::exists(tmp.file("s.carton")));
}
