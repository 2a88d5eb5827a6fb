#include "carton/manifest/hash_files.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/file_identity.h"
#include "carton/common/unique_fd.h"
#include "testing.h"

using namespace carton;
using namespace carton::manifest;

namespace {

// Deterministic pseudo-random bytes.
std::vector<std::byte> Noise(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> out(n);
  std::uint32_t x = seed | 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::byte>(x);
  }
  return out;
}

}  // namespace

TEST_CASE("manifest: HashFiles equals HashFile for every file", "[manifest][hash_files]") {
  testing::TempDir dir;
  std::vector<std::string> paths;
  auto add = [&](const std::string& name, ByteView bytes) {
    paths.push_back(dir.file(name));
    testing::WriteBytes(paths.back(), bytes);
  };
  add("empty", {});
  add("abc", AsBytes("abc"));
  add("big", Noise((3u << 20) + 12345, 7));  // spans several read buffers
  add("one_mib", Noise(1u << 20, 9));        // exactly one buffer
  for (int i = 0; i < 6; ++i) add("small" + std::to_string(i), Noise(1000 * i + 1, i + 100));
  add("empty_again", {});

  std::vector<Digest> expected;
  for (const auto& p : paths) {
    Result<Digest> d = HashFile(p);
    REQUIRE(d.ok());
    expected.push_back(*d);
  }
  for (unsigned threads : {1u, 4u, 0u}) {
    INFO("threads " << threads);
    Result<std::vector<Digest>> got = HashFiles(paths, threads);
    REQUIRE(got.ok());
    CHECK(*got == expected);
  }
  CHECK(ToHex((*HashFiles(paths, 1))[1]) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("manifest: HashFiles of no files is empty", "[manifest][hash_files]") {
  Result<std::vector<Digest>> got = HashFiles({}, 4);
  REQUIRE(got.ok());
  CHECK(got->empty());
}

TEST_CASE("manifest: HashFiles names a missing file", "[manifest][hash_files]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("abc"));
  std::vector<std::string> paths = {dir.file("a"), dir.file("missing"), dir.file("a")};
  for (unsigned threads : {1u, 4u}) {
    Result<std::vector<Digest>> got = HashFiles(paths, threads);
    REQUIRE_FALSE(got.ok());
    CHECK(got.status().code() == StatusCode::kNotFound);
    CHECK_THAT(got.status().message(), Catch::StartsWith(dir.file("missing") + ": "));
  }
}

TEST_CASE("manifest: HashFiles rejects a directory", "[manifest][hash_files]") {
  testing::TempDir dir;
  std::vector<std::string> paths = {dir.path().string()};
  Result<std::vector<Digest>> got = HashFiles(paths);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(got.status().message(), Catch::Contains("not a regular file"));
}

TEST_CASE("manifest: HashFiles checks files are the versions expected", "[manifest][hash_files]") {
  testing::TempDir dir;
  std::vector<std::string> paths = {dir.file("a"), dir.file("b")};
  testing::WriteBytes(paths[0], AsBytes("abc"));
  testing::WriteBytes(paths[1], Noise(100000, 3));
  std::vector<FileIdentity> versions;
  for (const auto& p : paths) {
    auto id = IdentityOfPath(p);
    REQUIRE(id.ok());
    versions.push_back(*id);
  }
  Result<std::vector<Digest>> got = HashFiles(paths, 2, versions);
  REQUIRE(got.ok());
  CHECK(*got == *HashFiles(paths, 2));

  // Rewritten with the same size: the change time tells.
  testing::WriteBytes(paths[1], Noise(100000, 4));
  got = HashFiles(paths, 2, versions);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kIoError);
  CHECK(got.status().message() == paths[1] + ": changed before it was hashed");

  std::vector<FileIdentity> one = {versions[0]};
  CHECK(HashFiles(paths, 2, one).status().code() == StatusCode::kInvalidArgument);
}
