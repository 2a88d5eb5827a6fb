// The one carton reader: MANIFEST, LINKS and the entry rules read once;
// extraction checked against MANIFEST.
#include "carton/carton/reader.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "carton/carton/info.h"
#include "carton/carton/unpack.h"
#include "carton/common/random_access.h"
#include "carton_testing.h"
#include "source_testing.h"

using namespace carton;
using testing::MinimalFiles;
using testing::TempDir;
using Files = std::map<std::string, std::string>;
namespace fs = std::filesystem;

namespace {

std::string Write(const TempDir& tmp, const Files& files, const Files* manifest_files = nullptr,
                  bool with_manifest = true) {
  const std::string path = tmp.file("r.carton");
  testing::WriteArchive(path, files, manifest_files, with_manifest);
  return path;
}

}  // namespace

TEST_CASE("carton reader: MANIFEST is read once, with its bytes, lines and hash",
          "[carton][reader]") {
  TempDir tmp;
  const std::string path = Write(tmp, MinimalFiles());
  CartonReader reader = testing::OpenReader(path);
  CHECK(reader.location() == path);
  REQUIRE(reader.ReadManifest().ok());
  const ManifestFile& m = reader.manifest_file();
  CHECK(m.manifest.size() == MinimalFiles().size());
  CHECK(m.hash == manifest::Sha256Of(AsBytes(m.text)));
  CHECK(m.hash == *testing::SourceFor(path)->ManifestHash());
  // A second call reads nothing new: the same object.
  REQUIRE(reader.ReadManifest().ok());
  CHECK(&reader.manifest_file() == &m);
  CHECK(reader.Check().ok());
  CHECK(reader.EntryProblems().empty());
  CHECK(reader.linked_files().empty());
}

TEST_CASE("carton reader: a missing MANIFEST is corrupt and every reader says so alike",
          "[carton][reader]") {
  TempDir tmp;
  const std::string path = Write(tmp, MinimalFiles(), nullptr, /*with_manifest=*/false);
  CartonReader reader = testing::OpenReader(path);
  Status s = reader.ReadManifest();
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message() == "MANIFEST: missing");
  s = reader.Check();
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message() == path + ": MANIFEST: missing");
  CHECK(testing::SourceFor(path)->Info().status().message() == path + ": MANIFEST: missing");
  CHECK(Unpack(*testing::SourceFor(path), tmp.file("out")).status().message() ==
        path + ": MANIFEST: missing");
  CHECK_FALSE(fs::exists(tmp.file("out")));
}

TEST_CASE("carton reader: the entry rules list every problem, Check stops at the first",
          "[carton][reader]") {
  TempDir tmp;
  Files files = MinimalFiles(), claimed = MinimalFiles();
  files["model/extra.bin"] = "x";
  files["misc/stray.txt"] = "y";
  const std::string path = Write(tmp, files, &claimed);
  CartonReader reader = testing::OpenReader(path);
  // Without MANIFEST, unlisted files cannot be told.
  CHECK(reader.EntryProblems().empty());
  REQUIRE(reader.ReadManifest().ok());
  auto problems = reader.EntryProblems();
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].where == "misc/stray.txt");
  CHECK(problems[1].where == "model/extra.bin");
  CHECK(problems[1].message == "in the archive but not listed in MANIFEST");
  CHECK(problems[1].code == StatusCode::kCorrupt);
  const Status s = reader.Check();
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message() == path + ": misc/stray.txt: in the archive but not listed in MANIFEST");
}

TEST_CASE("carton reader: LINKS rules name uncovered files and stray hashes", "[carton][reader]") {
  TempDir tmp;
  Files files = MinimalFiles(), claimed = MinimalFiles();
  claimed["model/gone.bin"] = "gone";
  const std::string path = Write(tmp, files, &claimed);
  CartonReader reader = testing::OpenReader(path);
  REQUIRE(reader.ReadManifest().ok());
  REQUIRE(reader.ReadLinks().ok());
  CHECK_FALSE(reader.links().has_value());
  auto problems = reader.LinkProblems();
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].where == "model/gone.bin");
  CHECK(problems[0].message ==
        "listed in MANIFEST but missing from the archive, and there is no LINKS");

  const manifest::Digest gone = manifest::Sha256Of(AsBytes("gone"));
  const manifest::Digest stranger = manifest::Sha256Of(AsBytes("stranger"));
  files["LINKS"] = "version = 1\n[urls]\n" + manifest::ToHex(gone) +
                   " = [\"https://example.com/gone\"]\n" + manifest::ToHex(stranger) +
                   " = [\"https://example.com/stranger\"]\n";
  const std::string linked = Write(tmp, files, &claimed);
  CartonReader r2 = testing::OpenReader(linked);
  REQUIRE(r2.ReadManifest().ok());
  REQUIRE(r2.ReadLinks().ok());
  problems = r2.LinkProblems();
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].where == "LINKS");
  CHECK(problems[0].message == StrayLinksHash(stranger));
  REQUIRE(r2.linked_files().size() == 1);
  CHECK(r2.linked_files()[0].path == "model/gone.bin");
  CHECK(r2.linked_files()[0].sha256 == gone);
  CHECK(r2.linked_files()[0].urls == std::vector<std::string>{"https://example.com/gone"});
}

TEST_CASE("carton reader: ExtractTo writes a file only when its sha256 is MANIFEST's",
          "[carton][reader]") {
  TempDir tmp;
  Files files = MinimalFiles(), claimed = MinimalFiles();
  files["model/model.bin"][7] = 'X';
  const std::string path = Write(tmp, files, &claimed);
  CartonReader reader = testing::OpenReader(path);
  REQUIRE(reader.ReadManifest().ok());
  REQUIRE(reader.ExtractTo("model/sub/vocab.txt", tmp.file("vocab.txt")).ok());
  CHECK(testing::ReadText(tmp.file("vocab.txt")) == files["model/sub/vocab.txt"]);
  REQUIRE(reader.ExtractTo("MANIFEST", tmp.file("MANIFEST")).ok());
  CHECK(testing::ReadText(tmp.file("MANIFEST")) == reader.manifest_file().text);

  const Status bad = reader.ExtractTo("model/model.bin", tmp.file("model.bin"));
  CHECK(bad.code() == StatusCode::kCorrupt);
  CHECK(bad.message() ==
        "model/model.bin: " +
            manifest::DigestMismatch(manifest::Sha256Of(AsBytes(files["model/model.bin"])),
                                     manifest::Sha256Of(AsBytes(claimed["model/model.bin"]))));
  CHECK_FALSE(fs::exists(tmp.file("model.bin")));
  // Nothing but the two good files is left beside them.
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) n += e.is_regular_file();
  CHECK(n == 3);  // r.carton, vocab.txt, MANIFEST
}

TEST_CASE("carton reader: a source reader and a mapped one of the same file share MANIFEST",
          "[carton][reader]") {
  TempDir tmp;
  const std::string path = Write(tmp, MinimalFiles());
  auto file = MappedFile::Open(path);
  REQUIRE(file.ok());
  auto shared = std::make_shared<const MappedFile>(std::move(file).value());
  auto quick = CartonReader::OpenSource(FileSourceOf(shared));
  REQUIRE(quick.ok());
  REQUIRE(quick->ReadManifest().ok());
  auto whole = CartonReader::OpenFile(shared, {}, quick->shared_manifest(), "the carton");
  REQUIRE(whole.ok());
  CHECK(whole->location() == "the carton");
  // MANIFEST is the one the source reader read, not read again.
  CHECK(&whole->manifest_file() == &quick->manifest_file());
  CHECK(whole->Check().ok());
  CHECK(whole->zip().MappedData("model/model.bin").ok());
  CHECK_FALSE(quick->zip().MappedData("model/model.bin").ok());
}
