// Each verify rule: a valid archive has no problems; the same archive with
// one thing wrong reports that problem, naming the entry.
#include "carton/carton/verify.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "carton/carton/info.h"
#include "carton/carton/unpack.h"
#include "carton/zip/reader.h"
#include "carton_testing.h"
#include "source_testing.h"

using namespace carton;
using testing::MinimalFiles;
using testing::TempDir;
using Files = std::map<std::string, std::string>;

namespace {

VerifyReport VerifyFiles(const Files& files, const Files* manifest_files = nullptr,
                         bool with_manifest = true) {
  TempDir tmp;
  std::string path = tmp.file("v.carton");
  testing::WriteArchive(path, files, manifest_files, with_manifest);
  auto r = Verify(*testing::SourceFor(path));
  REQUIRE(r.ok());
  return std::move(r).value();
}

bool Has(const VerifyReport& r, std::string_view where, std::string_view substring) {
  for (const auto& p : r.problems) {
    // carton.toml problems name the table's line:column after the file.
    const bool at = p.where == where || p.where.starts_with(std::string(where) + ":");
    if (at && p.message.find(substring) != std::string::npos) return true;
  }
  std::string all;
  for (const auto& p : r.problems) all += "\n  " + p.where + ": " + p.message;
  UNSCOPED_INFO("problems:" << all);
  return false;
}

// Larger than the stored files whose CRC-32 verify checks in a task of its
// own when it has more threads than large files (4 MiB).
constexpr std::size_t kLargeSize = std::size_t{6} << 20;
constexpr std::size_t kFlipAt = 5 << 20;

std::string LargeContent(std::uint32_t seed) {
  std::string s(kLargeSize, '\0');
  for (char& c : s) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>(seed >> 24);
  }
  return s;
}

enum class Damage { kNone, kCrc32, kData };

// A carton of MinimalFiles and two large stored files, at `path`. kCrc32:
// one byte of model/large1.bin differs from what its CRC-32 was computed
// on, and MANIFEST has the sha256 of the changed bytes. kData: the same
// byte changed, but MANIFEST has the sha256 of the original bytes.
void WriteLargeCarton(const std::string& path, Damage damage) {
  Files files = MinimalFiles();
  files["model/large1.bin"] = LargeContent(1);
  files["model/large2.bin"] = LargeContent(2);
  Files claimed = files;
  if (damage == Damage::kCrc32) claimed["model/large1.bin"][kFlipAt] ^= 1;
  testing::WriteArchive(path, files, &claimed);
  if (damage == Damage::kNone) return;
  std::uint64_t offset = 0;
  {
    auto zip = ZipReader::Open(path);
    REQUIRE(zip.ok());
    auto at = zip->DataOffset("model/large1.bin");
    REQUIRE(at.ok());
    offset = *at + kFlipAt;
  }
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 1));
  REQUIRE(f.good());
}

// Verifies `path` on `threads` threads, checking that progress counts each
// byte hashed once.
VerifyReport VerifyOn(const std::string& path, unsigned threads) {
  INFO("threads: " << threads);
  std::atomic<std::uint64_t> last{0}, total{0};
  Environment env;
  env.threads = threads;
  VerifyOptions options;
  options.progress = [&](std::uint64_t done, std::uint64_t all) {
    std::uint64_t seen = last;
    while (done > seen && !last.compare_exchange_weak(seen, done)) {
    }
    total = all;
  };
  auto r = Verify(*testing::SourceFor(path, env), options);
  REQUIRE(r.ok());
  CHECK(last == total);
  CHECK(r->bytes_hashed == total);
  return std::move(r).value();
}

// The one problem of `r`, as "where: message".
std::string OnlyProblem(const VerifyReport& r) {
  REQUIRE(r.problems.size() == 1);
  return r.problems[0].where + ": " + r.problems[0].message;
}

}  // namespace

TEST_CASE("carton verify: a well-formed carton has no problems", "[carton][verify]") {
  auto r = VerifyFiles(MinimalFiles());
  CHECK(r.ok());
  CHECK(r.files_hashed == 7);
}

TEST_CASE("carton verify: reports a hash mismatch naming the file", "[carton][verify]") {
  Files files = MinimalFiles(), claimed = MinimalFiles();
  files["model/model.bin"][10] = 'X';
  auto r = VerifyFiles(files, &claimed);
  CHECK(Has(r, "model/model.bin", "but MANIFEST says"));
  CHECK(r.problems.size() == 1);
}

TEST_CASE("carton verify: files must match MANIFEST both ways", "[carton][verify]") {
  Files files = MinimalFiles(), claimed = MinimalFiles();
  files["model/extra.bin"] = "x";
  claimed["model/gone.bin"] = "y";
  auto r = VerifyFiles(files, &claimed);
  CHECK(Has(r, "model/extra.bin", "not listed in MANIFEST"));
  CHECK(Has(r, "model/gone.bin", "missing from the archive"));
}

TEST_CASE("carton verify: MANIFEST and carton.toml must exist and parse", "[carton][verify]") {
  auto none = VerifyFiles(MinimalFiles(), nullptr, /*with_manifest=*/false);
  CHECK(Has(none, "MANIFEST", "missing"));

  Files files = MinimalFiles();
  files.erase("carton.toml");
  CHECK(Has(VerifyFiles(files), "carton.toml", "missing"));

  files = MinimalFiles();
  files["carton.toml"] = "spec_version = 1\n[runner]\nrunner_name = \"x\"\n";
  CHECK(Has(VerifyFiles(files), "carton.toml", "required_framework_version"));

  files = MinimalFiles();
  files["MANIFEST"] = "b=" + std::string(64, '0') + "\na=" + std::string(64, '0') + "\n";
  TempDir tmp;
  std::string path = tmp.file("m.carton");
  {
    auto zip = ZipWriter::Create(path);
    for (const auto& [n, c] : files)
      REQUIRE(zip->AddBytes(n, AsBytes(c), Compression::kStored).ok());
    REQUIRE(zip->Finish().ok());
  }
  auto r = Verify(*testing::SourceFor(path));
  REQUIRE(r.ok());
  CHECK(Has(*r, "MANIFEST", "line 2"));
}

TEST_CASE("carton verify: tensor_data files must exist with the right size", "[carton][verify]") {
  Files files = MinimalFiles(), claimed;
  files["tensor_data/tensor_0.bin"] = std::string(7, '\1');
  auto r = VerifyFiles(files);
  CHECK(Has(r, "tensor_data/tensor_0.bin", "7 bytes but float32 of 2 elements needs 8"));

  files = MinimalFiles();
  files.erase("tensor_data/tensor_1.bin");
  CHECK(Has(VerifyFiles(files), "tensor_data/tensor_1.bin", "tensor \"y\" refers to it"));

  files = MinimalFiles();
  files.erase("tensor_data/index.toml");
  auto no_index = VerifyFiles(files);
  CHECK(Has(no_index, "tensor_data/index.toml", "missing, but tensor_data/ holds other files"));

  files = MinimalFiles();
  files["tensor_data/index.toml"] = "[[tensor]]\nname = \"x\"\ndtype = \"float99\"\n";
  CHECK(Has(VerifyFiles(files), "tensor_data/index.toml", "float99"));
}

TEST_CASE("carton verify: string tensors must hold as many strings as their shape",
          "[carton][verify]") {
  Files files = MinimalFiles();
  files["tensor_data/index.toml"] = std::string(testing::kMinimalIndex) +
                                    "[[tensor]]\nname = \"s\"\ndtype = \"string\"\nshape = [3]\n"
                                    "file = \"tensor_2.toml\"\n";
  files["tensor_data/tensor_2.toml"] = "data = [\"a\", \"b\", \"c\"]\n";
  CHECK(VerifyFiles(files).ok());
  files["tensor_data/tensor_2.toml"] = "data = [\"a\", \"b\"]\n";
  CHECK(Has(VerifyFiles(files), "tensor_data/tensor_2.toml", "2"));
}

TEST_CASE("carton verify: references must resolve and names must be declared", "[carton][verify]") {
  Files files = MinimalFiles();
  std::string config = testing::kMinimalConfig;
  config += "[[self_test]]\ninputs = { x = \"@tensor_data/nope\", z = \"@tensor_data/x\" }\n";
  config +=
      "[[example]]\ninputs = { x = \"@misc/readme.md\" }\nsample_out = { y = \"@misc/gone.png\" "
      "}\n";
  files["carton.toml"] = config;
  auto r = VerifyFiles(files);
  CHECK(Has(r, "carton.toml:18:1", "self-test 2 inputs: @tensor_data/nope names no tensor"));
  CHECK(Has(r, "carton.toml:18:1", "self-test 2 inputs: \"z\" is not a declared input"));
  CHECK(Has(r, "carton.toml:20:1", "example 1 sample_out: @misc/gone.png names no file in misc/"));
  CHECK_FALSE(Has(r, "carton.toml", "readme.md"));
  CHECK(r.problems.size() == 3);
}

TEST_CASE("carton verify: lists every problem, not just the first", "[carton][verify]") {
  Files files = MinimalFiles(), claimed = MinimalFiles();
  files["model/model.bin"][0] = 'X';
  files["misc/readme.md"] = "changed";
  files["model/stray"] = "";
  auto r = VerifyFiles(files, &claimed);
  CHECK(r.problems.size() == 3);
}

TEST_CASE("carton verify: a file that is not a zip is a problem, a missing file an error",
          "[carton][verify]") {
  TempDir tmp;
  testing::WriteBytes(tmp.file("junk.carton"), AsBytes("not a zip at all"));
  auto r = Verify(*testing::SourceFor(tmp.file("junk.carton")));
  REQUIRE(r.ok());
  CHECK_FALSE(r->ok());
  auto missing = Verify(*testing::SourceFor(tmp.file("none.carton")));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
}

// One thread checks a large stored file's sha256 and CRC-32 in one pass;
// with threads to spare, two tasks check them apart.
TEST_CASE("carton verify: large stored files pass on one thread and on many", "[carton][verify]") {
  TempDir tmp;
  WriteLargeCarton(tmp.file("v.carton"), Damage::kNone);
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    auto r = VerifyOn(tmp.file("v.carton"), threads);
    CHECK(r.ok());
    CHECK(r.files_hashed == 9);
    CHECK(r.bytes_hashed > 2 * kLargeSize);
  }
}

TEST_CASE(
    "carton verify: a crc-32 mismatch in a large stored file is reported on one thread "
    "and on many",
    "[carton][verify]") {
  TempDir tmp;
  WriteLargeCarton(tmp.file("v.carton"), Damage::kCrc32);
  const std::string one = OnlyProblem(VerifyOn(tmp.file("v.carton"), 1));
  CHECK_THAT(one, Catch::StartsWith("model/large1.bin: entry \"model/large1.bin\": crc-32 "
                                    "mismatch: the directory says 0x"));
  for (unsigned threads : {2u, 3u, 8u}) {
    INFO("threads: " << threads);
    CHECK(OnlyProblem(VerifyOn(tmp.file("v.carton"), threads)) == one);
  }
}

TEST_CASE(
    "carton verify: a sha256 mismatch in a large stored file is reported, not its crc-32, "
    "on one thread and on many",
    "[carton][verify]") {
  TempDir tmp;
  WriteLargeCarton(tmp.file("v.carton"), Damage::kData);
  const std::string one = OnlyProblem(VerifyOn(tmp.file("v.carton"), 1));
  CHECK_THAT(one, Catch::StartsWith("model/large1.bin: sha256 "));
  CHECK_THAT(one, Catch::Contains("but MANIFEST says"));
  for (unsigned threads : {2u, 3u, 8u}) {
    INFO("threads: " << threads);
    CHECK(OnlyProblem(VerifyOn(tmp.file("v.carton"), threads)) == one);
  }
}

TEST_CASE("carton unpack: checks hashes and leaves nothing on failure", "[carton][unpack]") {
  TempDir tmp;
  Files files = MinimalFiles(), claimed = MinimalFiles();
  testing::WriteArchive(tmp.file("good.carton"), files);
  files["model/model.bin"][5] = 'Z';
  testing::WriteArchive(tmp.file("bad.carton"), files, &claimed);

  Status s = Unpack(*testing::SourceFor(tmp.file("bad.carton")), tmp.file("out")).status();
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message().find("model/model.bin: sha256") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.file("out")));
  for (auto& e : std::filesystem::directory_iterator(tmp.path())) {
    CHECK(e.path().filename().string().find("unpack") == std::string::npos);
  }

  REQUIRE(Unpack(*testing::SourceFor(tmp.file("good.carton")), tmp.file("out")).ok());
  CHECK(testing::ReadText(tmp.file("out/model/sub/vocab.txt")) == "hello\nworld\n");
  Status again = Unpack(*testing::SourceFor(tmp.file("good.carton")), tmp.file("out")).status();
  CHECK(again.code() == StatusCode::kInvalidArgument);
  CHECK(again.message().find("not an empty directory") != std::string::npos);
}

TEST_CASE("carton hash: prints the sha256 of MANIFEST and checks it", "[carton][hash]") {
  TempDir tmp;
  testing::WriteArchive(tmp.file("a.carton"), MinimalFiles());
  auto h = testing::SourceFor(tmp.file("a.carton"))->ManifestHash();
  REQUIRE(h.ok());
  auto again = testing::SourceFor(tmp.file("a.carton"))->ManifestHash();
  CHECK(*h == *again);
  testing::WriteArchive(tmp.file("b.carton"), MinimalFiles(), nullptr, false);
  auto none = testing::SourceFor(tmp.file("b.carton"))->ManifestHash();
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("MANIFEST") != std::string::npos);
}
