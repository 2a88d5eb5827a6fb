// Inputs that once broke carton, kept as files and fed to the fuzz target
// (fuzz/fuzz_targets.h) that reads them, in every build (also under the
// sanitizers, scripts/test.sh --sanitize):
//   tests/hostile/regressions/<target>-<what>.<ext>: one file per past
//     finding (README.md there tells each story); each runs cleanly through
//     its target and gives the outcome its fix established;
//   tests/hostile/known_bad/<target>/*: hostile inputs every build replays;
//     each runs cleanly through its target and is refused by its parser.
// A new finding becomes a file in regressions/ with a case below.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "carton/carton/info.h"
#include "carton/carton/source.h"
#include "carton/carton/verify.h"
#include "carton/common/random_access.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
#include "carton/loader/loader.h"
#include "carton/manifest/manifest.h"
#include "carton/safetensors/file.h"
#include "carton/sign/bundle.h"
#include "carton/zip/reader.h"
#include "fuzz_targets.h"
#include "source_testing.h"
#include "testing.h"

using namespace carton;
using carton::fuzz::Input;
using carton::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(CARTON_SOURCE_DIR) + "/tests/hostile";

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs fuzz target `name` on the file's bytes; false if there is no such
// target.
bool RunTarget(std::string_view name, const std::string& bytes) {
  for (const auto& t : carton::fuzz::AllTargets()) {
    if (t.name != name) continue;
    t.run(Input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    return true;
  }
  return false;
}

// A regression file: its bytes, after running through its target.
std::string Regression(const std::string& file) {
  const std::string path = kDir + "/regressions/" + file;
  INFO(path);
  REQUIRE(fs::is_regular_file(path));
  const std::string bytes = Bytes(path);
  CHECK(RunTarget(file.substr(0, file.find('-')), bytes));
  return bytes;
}

void ExpectError(const Status& s, StatusCode code, const std::string& part) {
  INFO(s.ToString());
  CHECK(s.code() == code);
  CHECK_THAT(s.message(), Catch::Contains(part));
}

// Whether `target`'s parser refuses `bytes`.
bool Refused(const std::string& target, const std::string& bytes, const std::string& path) {
  const ByteView view = AsBytes(bytes);
  if (target == "safetensors") return !safetensors::File::FromBuffer(view).ok();
  if (target == "config") return !ParseConfig(bytes).ok();
  if (target == "tensor_index") return !ParseIndex(bytes).ok();
  if (target == "manifest") return !manifest::Manifest::Parse(view).ok();
  if (target == "links") return !links::ParseLinks(bytes).ok();
  if (target == "zip") {
    auto zip = ZipReader::OpenBuffer(view);
    if (!zip.ok()) return true;
    for (const auto& e : zip->entries()) {
      if (!zip->Read(e.name).ok()) return true;
    }
    return false;
  }
  if (target == "bundle") return !sign::ParseBundle(view).ok();
  if (target == "carton") {
    auto report = Verify(*testing::SourceFor(path));
    return !report.ok() || !report->ok();
  }
  FAIL("no refusal check for target " << target);
  return false;
}

}  // namespace

TEST_CASE("fuzz regressions: a dotted key of 50,000 parts is refused before toml++ recurses",
          "[hostile][fuzz]") {
  // toml++ builds one table level per part of a dotted key, recursively, and
  // overflowed the stack (about 40,000 parts on 8 MiB): carton.toml first,
  // then index.toml and LINKS, which now share one screen.
  ExpectError(ParseConfig(Regression("config-dotted-key.toml")).status(), StatusCode::kCorrupt,
              "carton.toml:2:16: dotted key has more than 8 parts");
  ExpectError(ParseIndex(Regression("tensor_index-dotted-key.toml")).status(), StatusCode::kCorrupt,
              "dotted key has more than 8 parts");
  ExpectError(links::ParseLinks(Regression("links-dotted-key.toml")).status(), StatusCode::kCorrupt,
              "LINKS:3:8: dotted key has more than 4 parts");
}

TEST_CASE("fuzz regressions: a deflate entry claiming 1 TiB is refused on open",
          "[hostile][fuzz]") {
  const std::string bytes = Regression("zip-deflate-ratio-bomb.zip");
  ExpectError(ZipReader::OpenBuffer(AsBytes(bytes)).status(), StatusCode::kCorrupt,
              "entry \"model/weights.bin\": declares 1099511627776 bytes from ");
  ExpectError(ZipReader::OpenBuffer(AsBytes(bytes)).status(), StatusCode::kCorrupt,
              "more than the deflate ratio limit of 1040 to 1");
}

TEST_CASE("fuzz regressions: names equal but for letter case are refused by both zip readers",
          "[hostile][fuzz]") {
  ExpectError(ZipReader::OpenBuffer(AsBytes(Regression("zip-case-collision.zip"))).status(),
              StatusCode::kCorrupt, "name differs only in letter case from entry");
  // The reader of remote archives once skipped the name and limit checks.
  Regression("zip_source-case-collision.zip");
  auto source = OpenFileSource(kDir + "/regressions/zip_source-case-collision.zip");
  REQUIRE(source.ok());
  ExpectError(ZipReader::OpenSource(std::move(source).value()).status(), StatusCode::kCorrupt,
              "name differs only in letter case from entry");
}

TEST_CASE("fuzz regressions: 64 MiB of zstd zeros (about 32,000 : 1) is an honest entry",
          "[hostile][fuzz]") {
  // A single ratio cap of 1000 : 1 refused it; zstd's own cap is per method.
  const std::string bytes = Regression("zip-zstd-zeros.zip");
  auto zip = ZipReader::OpenBuffer(AsBytes(bytes));
  REQUIRE(zip.ok());
  std::uint64_t total = 0;
  bool zero = true;
  REQUIRE(zip->ReadTo("model/zeros.bin",
                      [&](ByteView chunk) {
                        for (std::byte b : chunk) zero &= b == std::byte{0};
                        total += chunk.size();
                        return Status::Ok();
                      })
              .ok());
  CHECK(total == std::uint64_t{64} << 20);
  CHECK(zero);
}

TEST_CASE(
    "fuzz regressions: every carton reader refuses an unknown method, a stray LINKS hash "
    "and an encrypted entry by the same rule",
    "[hostile][fuzz]") {
  // info and unpack once skipped the method and encryption rules that
  // verify applied; the loader kept a copy of the rules without them.
  Regression("carton-unknown-method.carton");
  ExpectError(
      testing::SourceFor(kDir + "/regressions/carton-unknown-method.carton")->Info().status(),
      StatusCode::kUnsupported,
      "model/weights.bin: compression method 12 is not stored, deflate or zstd");
  // Readers other than verify once accepted a LINKS hash MANIFEST does not
  // list.
  Regression("carton-links-stray-hash.carton");
  ExpectError(
      testing::SourceFor(kDir + "/regressions/carton-links-stray-hash.carton")->Info().status(),
      StatusCode::kCorrupt, ": LINKS: sha256 ");
  Regression("carton-encrypted-entry.carton");
  const std::string encrypted = kDir + "/regressions/carton-encrypted-entry.carton";
  ExpectError(testing::SourceFor(encrypted)->Info().status(), StatusCode::kCorrupt,
              "model/weights.bin: encrypted entries are not allowed");
  TempDir tmp;
  Environment env;
  env.cache_dir = tmp.file("cache");
  ExpectError(loader::Load(*testing::SourceFor(encrypted, env)).status(), StatusCode::kCorrupt,
              encrypted + ": model/weights.bin: encrypted entries are not allowed");
  // Refused before anything was written: no entry, no temporary directory.
  const std::string cartons = tmp.file("cache/cartons");
  CHECK((!fs::exists(cartons) || fs::is_empty(cartons)));
}

TEST_CASE("fuzz regressions: every regression file has a case", "[hostile][fuzz]") {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kDir + "/regressions")) {
    if (e.path().extension() != ".md") files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  const std::vector<std::string> covered = {"carton-encrypted-entry.carton",
                                            "carton-links-stray-hash.carton",
                                            "carton-unknown-method.carton",
                                            "config-dotted-key.toml",
                                            "links-dotted-key.toml",
                                            "tensor_index-dotted-key.toml",
                                            "zip-case-collision.zip",
                                            "zip-deflate-ratio-bomb.zip",
                                            "zip-zstd-zeros.zip",
                                            "zip_source-case-collision.zip"};
  CHECK(files == covered);
}

TEST_CASE("fuzz regressions: every known-bad input runs cleanly and is refused",
          "[hostile][fuzz]") {
  std::size_t count = 0;
  for (const auto& dir : fs::directory_iterator(kDir + "/known_bad")) {
    if (!dir.is_directory()) continue;
    const std::string target = dir.path().filename().string();
    for (const auto& file : fs::directory_iterator(dir.path())) {
      const std::string path = file.path().string();
      INFO(target << ": " << path);
      const std::string bytes = Bytes(path);
      CHECK(RunTarget(target, bytes));
      CHECK(Refused(target, bytes, path));
      ++count;
    }
  }
  CHECK(count >= 40);
}

TEST_CASE("fuzz regressions: every target takes empty and tiny inputs", "[hostile][fuzz]") {
  const std::vector<std::string> inputs = {"",  std::string(1, '\0'), "\xff", "{",
                                           "[", "PK\x05\x06"};
  for (const auto& t : carton::fuzz::AllTargets()) {
    for (const auto& in : inputs) {
      INFO(t.name);
      t.run(Input(reinterpret_cast<const std::uint8_t*>(in.data()), in.size()));
    }
  }
}

// The fuzz targets' seeds (fuzz/make_seeds.cc: valid inputs written by
// carton's own writers, and hand-written ones its parsers accept) run
// through their targets in every build, under the sanitizers too, as
// `scripts/fuzz.sh` replays them before it mutates anything.
TEST_CASE("fuzz regressions: every target runs cleanly on its seeds", "[hostile][fuzz]") {
  TempDir tmp;
  const std::string seeds = (tmp.path() / "seeds").string();
  const auto made = carton::testing::Run(std::string(CARTON_FUZZ_SEEDS) + " " + seeds);
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  for (const auto& t : carton::fuzz::AllTargets()) {
    const std::string dir = seeds + "/" + std::string(t.name);
    INFO(t.name);
    REQUIRE(fs::is_directory(dir));
    std::size_t count = 0;
    for (const auto& file : fs::directory_iterator(dir)) {
      const std::string bytes = Bytes(file.path().string());
      INFO(file.path().string());
      t.run(Input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
      ++count;
    }
    CHECK(count > 0);
  }
}
