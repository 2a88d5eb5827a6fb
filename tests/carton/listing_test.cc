// ListEntries, ReadCartonFile and DiffManifests/DiffCartons: a carton looked
// at file by file, without unpacking it.
#include "carton/carton/listing.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "carton/carton/info.h"
#include "carton/carton/links.h"
#include "carton/carton/pack.h"
#include "carton/manifest/sha256.h"
#include "carton_testing.h"
#include "source_testing.h"

using namespace carton;
namespace fs = std::filesystem;
using testing::MinimalFiles;
using testing::TempDir;

namespace {

std::string PackFiles(const TempDir& tmp, const std::string& name,
                      const std::map<std::string, std::string>& files,
                      PackCompression compression = PackCompression::kAuto) {
  const std::string dir = tmp.file(name);
  testing::WriteTree(dir, files);
  PackOptions o;
  o.compression = compression;
  auto r = Pack(dir, tmp.file(name + ".carton"), o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return tmp.file(name + ".carton");
}

manifest::Digest Sha(const std::string& text) { return manifest::Sha256Of(AsBytes(text)); }

std::string ReadAll(const std::string& carton, const std::string& path, Status* status,
                    const Environment& env = {}) {
  std::string out;
  *status = ReadCartonFile(*testing::SourceFor(carton, env), path, [&](ByteView chunk) {
    out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    return Status::Ok();
  });
  return out;
}

}  // namespace

TEST_CASE("carton listing: every MANIFEST file with its size, method and sha256",
          "[carton][listing]") {
  TempDir tmp;
  const std::string carton = PackFiles(tmp, "m", MinimalFiles(), PackCompression::kDeflate);
  auto entries = ListEntries(*testing::SourceFor(carton));
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == MinimalFiles().size());
  for (const auto& e : *entries) {
    INFO(e.path);
    REQUIRE(MinimalFiles().count(e.path) == 1);
    if (e.path == "tensor_data/index.toml") continue;  // pack rewrites it
    CHECK(e.size == MinimalFiles().at(e.path).size());
    CHECK(e.sha256 == Sha(MinimalFiles().at(e.path)));
    CHECK(e.method == "deflate");
    CHECK_FALSE(e.linked);
  }
  CHECK(ListEntries(*testing::SourceFor(tmp.file("none.carton"))).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("carton listing: a linked file has its URLs and is read through the blob cache",
          "[carton][listing]") {
  TempDir tmp;
  const std::string carton = PackFiles(tmp, "m", MinimalFiles());
  ShrinkOptions shrink;
  shrink.url_prefix = "file://" + tmp.file("blobs");
  shrink.blobs_dir = tmp.file("blobs");
  shrink.min_size = 1000;
  auto shrunk = Shrink(*testing::SourceFor(carton), tmp.file("s.carton"), shrink);
  REQUIRE(shrunk.ok());
  REQUIRE(shrunk->moved == std::vector<std::string>{"model/model.bin"});

  auto entries = ListEntries(*testing::SourceFor(tmp.file("s.carton")));
  REQUIRE(entries.ok());
  const CartonEntry* linked = nullptr;
  for (const auto& e : *entries) {
    if (e.path == "model/model.bin") linked = &e;
  }
  REQUIRE(linked != nullptr);
  CHECK(linked->linked);
  CHECK(linked->size == 0);
  REQUIRE(linked->urls.size() == 1);
  CHECK(linked->urls[0] == shrink.url_prefix + "/" + manifest::ToHex(linked->sha256));

  Environment options;
  options.cache_dir = tmp.file("cache");
  Status s;
  // file:// links are refused unless allowed.
  ReadAll(tmp.file("s.carton"), "model/model.bin", &s, options);
  CHECK_FALSE(s.ok());
  options.network.allow_file_links = true;
  CHECK(ReadAll(tmp.file("s.carton"), "model/model.bin", &s, options) ==
        MinimalFiles().at("model/model.bin"));
  CHECK(s.ok());
}

TEST_CASE("carton listing: ReadCartonFile gives the bytes, checks them, names a missing path",
          "[carton][listing]") {
  TempDir tmp;
  const std::string carton = PackFiles(tmp, "m", MinimalFiles(), PackCompression::kStored);
  Status s;
  CHECK(ReadAll(carton, "model/sub/vocab.txt", &s) == "hello\nworld\n");
  CHECK(s.ok());

  const std::string manifest = ReadAll(carton, "MANIFEST", &s);
  CHECK(s.ok());
  CHECK(manifest::Sha256Of(AsBytes(manifest)) == *testing::SourceFor(carton)->ManifestHash());

  ReadAll(carton, "model/none.txt", &s);
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message() == carton + ": model/none.txt: not in MANIFEST");

  // Bytes whose CRC-32 is right but whose sha256 is not MANIFEST's: the
  // hash check fails after the sink saw them.
  auto files = MinimalFiles();
  auto listed = files;
  listed["model/model.bin"] = std::string(3000, 'x');
  testing::WriteArchive(tmp.file("bad.carton"), files, &listed);
  const std::string bad = tmp.file("bad.carton");
  CHECK(ReadAll(bad, "model/model.bin", &s) == files.at("model/model.bin"));
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK_THAT(s.message(), Catch::StartsWith(bad + ": model/model.bin: sha256 "));
}

TEST_CASE("carton listing: a diff lists added, removed and changed files by path",
          "[carton][listing]") {
  TempDir tmp;
  auto files = MinimalFiles();
  const std::string a = PackFiles(tmp, "a", files);
  files["model/sub/vocab.txt"] = "other\n";
  files.erase("misc/readme.md");
  files["misc/new.md"] = "new\n";
  const std::string b = PackFiles(tmp, "b", files);

  auto same = DiffCartons(*testing::SourceFor(a), *testing::SourceFor(a));
  REQUIRE(same.ok());
  CHECK(same->identical());
  CHECK(same->added.empty());
  CHECK(same->removed.empty());
  CHECK(same->changed.empty());

  auto d = DiffCartons(*testing::SourceFor(a), *testing::SourceFor(b));
  REQUIRE(d.ok());
  CHECK_FALSE(d->identical());
  REQUIRE(d->added.size() == 1);
  CHECK(d->added[0].path == "misc/new.md");
  REQUIRE(d->removed.size() == 1);
  CHECK(d->removed[0].path == "misc/readme.md");
  REQUIRE(d->changed.size() == 1);
  CHECK(d->changed[0].path == "model/sub/vocab.txt");
  CHECK(d->changed[0].a_sha256 == Sha("hello\nworld\n"));
  CHECK(d->changed[0].b_sha256 == Sha("other\n"));
  CHECK(d->a_hash == *testing::SourceFor(a)->ManifestHash());
  CHECK(d->b_hash == *testing::SourceFor(b)->ManifestHash());

  auto missing = DiffCartons(*testing::SourceFor(a), *testing::SourceFor(tmp.file("none.carton")));
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("none.carton"));
}
