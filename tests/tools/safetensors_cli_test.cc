// Runs the built `carton` binary and checks exit codes, stdout and stderr.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/safetensors/writer.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;
using testing::Run;

namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string WriteValid(const testing::TempDir& dir, const std::string& name) {
  std::vector<std::byte> a(8), b(3);
  std::vector<TensorSource> ts = {{"a", Dtype::kF32, {2}, a, {}}, {"b", Dtype::kI8, {3}, b, {}}};
  std::string path = dir.file(name);
  REQUIRE(WriteFile(path, ts, {{"k", "v"}}).ok());
  return path;
}

}  // namespace

TEST_CASE("cli: safetensors inspect lists tensors and metadata", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string path = WriteValid(dir, "m.safetensors");
  auto r = Run(testing::CartonBin() + " safetensors inspect " + Quote(path));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("2 tensors") != std::string::npos);
  CHECK(r.out.find("k = v") != std::string::npos);
  CHECK(r.out.find("a     F32    [2]    8      0") != std::string::npos);
  CHECK(r.out.find("b     I8     [3]    3      8") != std::string::npos);
}

TEST_CASE("cli: safetensors inspect --json is machine-readable", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string path = WriteValid(dir, "m.safetensors");
  auto r = Run(testing::CartonBin() + " safetensors inspect --json " + Quote(path));
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["header_size"] == 136);
  CHECK(j["metadata"]["k"] == "v");
  REQUIRE(j["tensors"].size() == 2);
  CHECK(j["tensors"][1]["name"] == "b");
  CHECK(j["tensors"][1]["shape"] == nlohmann::json::array({3}));
  CHECK(j["tensors"][1]["data_offsets"] == nlohmann::json::array({8, 11}));
}

TEST_CASE("cli: safetensors verify exits 0 for valid files", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string a = WriteValid(dir, "a.safetensors"), b = WriteValid(dir, "b.safetensors");
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(a) + " " + Quote(b));
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("a.safetensors: ok (2 tensors)") != std::string::npos);
  CHECK(r.out.find("b.safetensors: ok (2 tensors)") != std::string::npos);
}

TEST_CASE("cli: safetensors verify exits 1 and names every bad file", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string good = WriteValid(dir, "good.safetensors");
  std::string bad1 = WriteValid(dir, "bad1.safetensors");
  std::string bad2 = dir.file("bad2.safetensors");
  {
    // Trailing bytes: the polyglot defence.
    auto bytes = testing::ReadText(bad1) + "junk";
    testing::WriteBytes(bad1, AsBytes(bytes));
  }
  testing::WriteBytes(
      bad2,
      testing::RawSafetensors(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12));
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(good) + " " + Quote(bad1) +
               " " + Quote(bad2));
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("good.safetensors: ok") != std::string::npos);
  CHECK(r.err.find("carton safetensors verify: " + bad1 + ": tensor data ends at 11") !=
        std::string::npos);
  CHECK(r.err.find("carton safetensors verify: " + bad2 +
                   ": tensor \"w\": data_offsets [0, 12] but F32 [2, 2] needs 16 bytes") !=
        std::string::npos);
}

TEST_CASE("cli: safetensors verify --json reports each file", "[cli][safetensors]") {
  testing::TempDir dir;
  std::string good = WriteValid(dir, "good.safetensors");
  std::string bad = dir.file("bad.safetensors");
  testing::WriteBytes(bad, AsBytes("short"));
  auto r =
      Run(testing::CartonBin() + " safetensors verify --json " + Quote(good) + " " + Quote(bad));
  CHECK(r.exit_code == 1);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["valid"] == true);
  CHECK(j[1]["valid"] == false);
  CHECK(j[1]["code"] == "corrupt");
}

TEST_CASE("cli: a missing file or bad usage exits 2", "[cli]") {
  testing::TempDir dir;
  auto r = Run(testing::CartonBin() + " safetensors verify " + Quote(dir.file("none")));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("carton safetensors verify: ") == 0);
  CHECK(Run(testing::CartonBin() + " safetensors inspect").exit_code == 2);
  CHECK(Run(testing::CartonBin() + " no-such-command").exit_code == 2);
  CHECK(Run(testing::CartonBin() + " --version").out.find("carton 0.1.0") != std::string::npos);
}
