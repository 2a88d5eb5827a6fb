#include "carton/manifest/sha256.h"

#include <catch2/catch.hpp>

#include "testing.h"

using namespace carton;
using namespace carton::manifest;

TEST_CASE("manifest sha256: known vectors", "[manifest][sha256]") {
  CHECK(ToHex(Sha256Of({})) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(ToHex(Sha256Of(AsBytes("abc"))) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update(AsBytes("a"));
  h.Update(AsBytes("bc"));
  CHECK(ToHex(h.Finish()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Finish resets.
  CHECK(ToHex(h.Finish()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("manifest sha256: hex parsing is strict", "[manifest][sha256]") {
  auto d = Sha256Of(AsBytes("abc"));
  CHECK(ParseHex(ToHex(d)) == d);
  std::string upper = ToHex(d);
  upper[0] = 'B';
  CHECK_FALSE(ParseHex(upper).has_value());
  CHECK_FALSE(ParseHex(ToHex(d).substr(1)).has_value());
  CHECK_FALSE(ParseHex(ToHex(d) + "0").has_value());
  CHECK_FALSE(ParseHex(std::string(64, 'g')).has_value());
}

TEST_CASE("manifest sha256: hashes files, empty ones too", "[manifest][sha256]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("abc"));
  testing::WriteBytes(dir.file("e"), {});
  CHECK(ToHex(*HashFile(dir.file("a"))) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(HashFile(dir.file("e")).ok());
  CHECK(HashFile(dir.file("missing")).status().code() == StatusCode::kNotFound);
}
