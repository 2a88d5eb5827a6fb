#include "carton/common/status.h"

#include <catch2/catch.hpp>

#include "carton/common/bytes.h"

using namespace carton;

TEST_CASE("common: status carries code, message and context", "[common]") {
  Status s = Corrupt("bad byte", 7);
  CHECK_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.detail() == 7);
  Status c = s.WithContext("model.safetensors");
  CHECK(c.message() == "model.safetensors: bad byte");
  CHECK(c.detail() == 7);
  CHECK(c.ToString() == "corrupt: model.safetensors: bad byte");
  CHECK(Status::Ok().WithContext("x").ok());
}

static Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}
static Result<int> Quarter(int x) {
  CARTON_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST_CASE("common: Result propagates errors through ASSIGN_OR_RETURN", "[common]") {
  CHECK(*Quarter(8) == 2);
  auto r = Quarter(6);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("common: little-endian helpers and checked arithmetic", "[common]") {
  std::byte b[8];
  StoreLE64(b, 0x0102030405060708ull);
  CHECK(std::to_integer<int>(b[0]) == 8);
  CHECK(LoadLE64(b) == 0x0102030405060708ull);
  StoreLE32(b, 0xA1B2C3D4u);
  CHECK(LoadLE32(b) == 0xA1B2C3D4u);
  StoreLE16(b, 0xBEEF);
  CHECK(LoadLE16(b) == 0xBEEF);
  std::uint64_t out;
  CHECK_FALSE(CheckedMul(1ull << 62, 4, &out));
  CHECK(CheckedMul(1ull << 61, 4, &out));
  CHECK_FALSE(CheckedAdd(~0ull, 1, &out));
  CHECK(InBounds(8, 0, 8));
  CHECK_FALSE(InBounds(9, 0, 8));
  CHECK_FALSE(InBounds(4, ~0ull, 8));
}
