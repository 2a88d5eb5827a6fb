#include "carton/safetensors/compare.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

namespace carton::safetensors {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor Make(Dtype dtype, std::vector<std::uint64_t> shape, std::vector<std::byte> data) {
  return Tensor{std::string("w"), dtype, std::move(shape), std::move(data)};
}

std::vector<std::byte> Raw(std::initializer_list<unsigned> bytes) {
  std::vector<std::byte> out;
  for (unsigned b : bytes) out.push_back(static_cast<std::byte>(b));
  return out;
}

// Little-endian elements of `width` bytes each.
std::vector<std::byte> Words(unsigned width, std::initializer_list<std::uint64_t> words) {
  std::vector<std::byte> out;
  for (std::uint64_t w : words) {
    for (unsigned i = 0; i < width; ++i) out.push_back(static_cast<std::byte>(w >> (8 * i)));
  }
  return out;
}

Tensor F32(std::vector<std::uint64_t> shape, std::initializer_list<float> values) {
  std::vector<std::byte> data(values.size() * 4);
  std::size_t i = 0;
  for (float v : values) StoreLE32(&data[4 * i++], std::bit_cast<std::uint32_t>(v));
  return Make(Dtype::kF32, std::move(shape), std::move(data));
}

Tensor F64(std::vector<std::uint64_t> shape, std::initializer_list<double> values) {
  std::vector<std::byte> data(values.size() * 8);
  std::size_t i = 0;
  for (double v : values) StoreLE64(&data[8 * i++], std::bit_cast<std::uint64_t>(v));
  return Make(Dtype::kF64, std::move(shape), std::move(data));
}

// C64 from (real, imaginary) pairs.
Tensor C64(std::vector<std::uint64_t> shape, std::initializer_list<float> parts) {
  Tensor t = F32({}, parts);
  t.dtype = Dtype::kC64;
  t.shape = std::move(shape);
  return t;
}

// Decodes single-byte (or 16/32/64-bit) elements given as raw words.
std::vector<double> Decode(Dtype dtype, std::initializer_list<std::uint64_t> words) {
  const unsigned width = DtypeBits(dtype) / 8;
  Tensor t = Make(dtype, {words.size()}, Words(width, words));
  auto r = DecodeToDouble(t.view());
  REQUIRE(r.ok());
  return *r;
}

// Packs 6-bit elements into a little-endian bit stream.
std::vector<std::byte> Pack6(std::initializer_list<unsigned> values) {
  std::vector<std::byte> out((values.size() * 6 + 7) / 8);
  std::size_t bit = 0;
  for (unsigned v : values) {
    for (unsigned k = 0; k < 6; ++k, ++bit) {
      if ((v >> k) & 1) out[bit / 8] |= static_cast<std::byte>(1u << (bit % 8));
    }
  }
  return out;
}

CompareResult Compare(const Tensor& a, const Tensor& b, CompareOptions o = {}) {
  auto r = AllClose(a.view(), b.view(), o);
  REQUIRE(r.ok());
  return *r;
}

using Index = std::vector<std::uint64_t>;

TEST_CASE("safetensors compare: decodes F16, BF16, F32 and F64 bit patterns",
          "[safetensors][compare]") {
  auto f16 = Decode(Dtype::kF16, {0x3C00, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x7BFF, 0xC000});
  CHECK(f16[0] == 1.0);
  CHECK(f16[1] == kInf);
  CHECK(f16[2] == -kInf);
  CHECK(std::isnan(f16[3]));
  CHECK(f16[4] == std::ldexp(1.0, -24));
  CHECK(f16[5] == 65504.0);
  CHECK(f16[6] == -2.0);

  auto bf16 = Decode(Dtype::kBF16, {0x3F80, 0xC040, 0x7F80, 0x7FC0});
  CHECK(bf16[0] == 1.0);
  CHECK(bf16[1] == -3.0);
  CHECK(bf16[2] == kInf);
  CHECK(std::isnan(bf16[3]));

  auto f32 = Decode(Dtype::kF32, {0x3F800000, 0x00000001, 0xFF800000});
  CHECK(f32[0] == 1.0);
  CHECK(f32[1] == std::ldexp(1.0, -149));
  CHECK(f32[2] == -kInf);

  auto f64 = Decode(Dtype::kF64, {0x3FF0000000000000, 0x400921FB54442D18});
  CHECK(f64[0] == 1.0);
  CHECK(f64[1] == 3.141592653589793);
}

TEST_CASE("safetensors compare: decodes every F8 variant", "[safetensors][compare]") {
  auto e5m2 = Decode(Dtype::kF8E5M2, {0x7B, 0x3C, 0x7C, 0xFC, 0x7D, 0x01});
  CHECK(e5m2[0] == 57344.0);
  CHECK(e5m2[1] == 1.0);
  CHECK(e5m2[2] == kInf);
  CHECK(e5m2[3] == -kInf);
  CHECK(std::isnan(e5m2[4]));
  CHECK(e5m2[5] == std::ldexp(1.0, -16));

  auto e4m3 = Decode(Dtype::kF8E4M3, {0x7F, 0xFF, 0x7E, 0x38, 0x01, 0x78, 0x80});
  CHECK(std::isnan(e4m3[0]));
  CHECK(std::isnan(e4m3[1]));
  CHECK(e4m3[2] == 448.0);
  CHECK(e4m3[3] == 1.0);
  CHECK(e4m3[4] == std::ldexp(1.0, -9));
  CHECK(e4m3[5] == 256.0);  // exponent all ones is finite: no infinities
  CHECK(e4m3[6] == 0.0);
  CHECK(std::signbit(e4m3[6]));

  auto e8m0 = Decode(Dtype::kF8E8M0, {0x7F, 0x80, 0x00, 0xFE, 0xFF});
  CHECK(e8m0[0] == 1.0);
  CHECK(e8m0[1] == 2.0);
  CHECK(e8m0[2] == std::ldexp(1.0, -127));
  CHECK(e8m0[3] == std::ldexp(1.0, 127));
  CHECK(std::isnan(e8m0[4]));

  auto e4m3fnuz = Decode(Dtype::kF8E4M3Fnuz, {0x80, 0x40, 0x7F, 0x01, 0xC0, 0x00});
  CHECK(std::isnan(e4m3fnuz[0]));
  CHECK(e4m3fnuz[1] == 1.0);
  CHECK(e4m3fnuz[2] == 240.0);
  CHECK(e4m3fnuz[3] == std::ldexp(1.0, -10));
  CHECK(e4m3fnuz[4] == -1.0);
  CHECK(e4m3fnuz[5] == 0.0);

  auto e5m2fnuz = Decode(Dtype::kF8E5M2Fnuz, {0x80, 0x40, 0x7F, 0xFF, 0x01});
  CHECK(std::isnan(e5m2fnuz[0]));
  CHECK(e5m2fnuz[1] == 1.0);
  CHECK(e5m2fnuz[2] == 57344.0);
  CHECK(e5m2fnuz[3] == -57344.0);
  CHECK(e5m2fnuz[4] == std::ldexp(1.0, -17));
}

TEST_CASE("safetensors compare: decodes packed F4 and F6 elements low bits first",
          "[safetensors][compare]") {
  // Byte 0x71: element 0 is the low nibble (0x1), element 1 the high (0x7).
  Tensor f4 = Make(Dtype::kF4, {4}, Raw({0x71, 0xF2}));
  auto v = DecodeToDouble(f4.view());
  REQUIRE(v.ok());
  CHECK(*v == std::vector<double>{0.5, 6.0, 1.0, -6.0});

  Tensor e2m3 = Make(Dtype::kF6E2M3, {4}, Pack6({0x1F, 0x08, 0x3F, 0x01}));
  v = DecodeToDouble(e2m3.view());
  REQUIRE(v.ok());
  CHECK(*v == std::vector<double>{7.5, 1.0, -7.5, 0.125});

  Tensor e3m2 = Make(Dtype::kF6E3M2, {4}, Pack6({0x1F, 0x0C, 0x3F, 0x01}));
  v = DecodeToDouble(e3m2.view());
  REQUIRE(v.ok());
  CHECK(*v == std::vector<double>{28.0, 1.0, -28.0, 0.0625});

  // Element 1 straddles bytes 0 and 1: bits 6..7 of byte 0, then 0..3 of
  // byte 1. Here element 1 is 0b001111 (1.75): its low bits 11 sit in byte 0.
  Tensor straddle = Make(Dtype::kF6E3M2, {4}, Raw({0xC0, 0x03, 0x00}));
  v = DecodeToDouble(straddle.view());
  REQUIRE(v.ok());
  CHECK(*v == std::vector<double>{0.0, 1.75, 0.0, 0.0});
}

TEST_CASE("safetensors compare: decodes integers and BOOL to doubles", "[safetensors][compare]") {
  CHECK(Decode(Dtype::kI8, {0xFF, 0x80}) == std::vector<double>{-1.0, -128.0});
  CHECK(Decode(Dtype::kU16, {0xFFFF}) == std::vector<double>{65535.0});
  CHECK(Decode(Dtype::kI64, {0xFFFFFFFFFFFFFFFE}) == std::vector<double>{-2.0});
  CHECK(Decode(Dtype::kBool, {0, 1}) == std::vector<double>{0.0, 1.0});
}

TEST_CASE("safetensors compare: decoding C64 or a partial byte is an error",
          "[safetensors][compare]") {
  Tensor c = C64({1}, {1.0f, 2.0f});
  auto r = DecodeToDouble(c.view());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("C64"));

  Tensor f4 = Make(Dtype::kF4, {3}, Raw({0x00, 0x00}));
  r = DecodeToDouble(f4.view());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message() == "tensor \"w\": F4 [3] is 12 bits, not a whole number of bytes");
}

TEST_CASE("safetensors compare: values within tolerance are equal", "[safetensors][compare]") {
  Tensor a = F32({2, 3}, {1.0f, 2.0f, 3.0f, -4.0f, 0.0f, 1e6f});
  Tensor b = F32({2, 3}, {1.000001f, 2.0f, 3.00002f, -4.00003f, 0.0f, 1e6f + 8.0f});
  CompareResult r = Compare(a, b);
  CHECK(r.equal);
  CHECK(r.mismatches == 0);
  CHECK(r.numel == 6);
  CHECK(r.worst_index.empty());
  CHECK(r.message == "all 6 elements match");
}

TEST_CASE("safetensors compare: reports the worst element outside tolerance",
          "[safetensors][compare]") {
  Tensor a = F32({2, 3}, {1.0f, 2.001f, 3.0f, 4.0f, 5.0f, 1.5f});
  Tensor b = F32({2, 3}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 1.25f});
  CompareResult r = Compare(a, b);
  CHECK_FALSE(r.equal);
  CHECK(r.mismatches == 2);
  CHECK(r.worst_index == Index{1, 2});
  CHECK(r.actual == "1.5");
  CHECK(r.expected == "1.25");
  CHECK(r.abs_diff == 0.25);
  CHECK(r.tolerance == Approx(1.251e-05));
  CHECK(r.message ==
        "2 of 6 elements differ; worst at [1, 2]: 1.5 vs expected 1.25 "
        "(|diff| 0.25 > tol 1.251e-05)");

  // Looser options accept both.
  CHECK(Compare(a, b, {.rtol = 0.25, .atol = 0}).equal);
  CHECK_FALSE(Compare(a, b, {.rtol = 0.19, .atol = 0}).equal);
  CHECK(Compare(a, b, {.rtol = 0, .atol = 0.25}).equal);
}

TEST_CASE("safetensors compare: worst means furthest past the tolerance",
          "[safetensors][compare]") {
  // Element 0 is off by 100% but its tolerance is tiny; element 1 is off by
  // 20 against a tolerance of 10, which is further past it.
  Tensor a = F64({2}, {2.0, 1e6 + 20});
  Tensor b = F64({2}, {1.0, 1e6});
  CompareResult r = Compare(a, b);
  CHECK(r.mismatches == 2);
  CHECK(r.worst_index == Index{1});
  CHECK(r.actual == "1000020");
  CHECK(r.abs_diff == 20.0);
}

TEST_CASE("safetensors compare: NaN equals NaN only with equal_nan", "[safetensors][compare]") {
  Tensor a = F32({3}, {1.0f, static_cast<float>(kNaN), 3.0f});
  Tensor b = F32({3}, {1.0f, static_cast<float>(kNaN), 3.0f});

  CompareResult off = Compare(a, b);
  CHECK_FALSE(off.equal);
  CHECK(off.mismatches == 1);
  CHECK(off.worst_index == Index{1});
  CHECK(off.message ==
        "1 of 3 elements differ; worst at [1]: nan vs expected nan "
        "(nan vs nan; equal_nan is off)");

  CHECK(Compare(a, b, {.equal_nan = true}).equal);

  // NaN against a number never matches, and outranks a finite mismatch.
  Tensor c = F32({3}, {9.0f, static_cast<float>(kNaN), 3.0f});
  Tensor d = F32({3}, {1.0f, 2.0f, 3.0f});
  CompareResult r = Compare(c, d, {.equal_nan = true});
  CHECK(r.mismatches == 2);
  CHECK(r.worst_index == Index{1});
  CHECK(std::isnan(r.abs_diff));
  CHECK(r.message == "2 of 3 elements differ; worst at [1]: nan vs expected 2 (|diff| nan)");
}

TEST_CASE("safetensors compare: infinity equals only the same infinity", "[safetensors][compare]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(Compare(F32({2}, {inf, -inf}), F32({2}, {inf, -inf})).equal);
  CompareResult r = Compare(F32({3}, {inf, 3e38f, 1.0f}), F32({3}, {-inf, inf, 1.0f}),
                            {.rtol = 1.0, .atol = 1.0});
  CHECK(r.mismatches == 2);
  CHECK(r.worst_index == Index{0});
  CHECK(r.abs_diff == kInf);
  CHECK(r.message ==
        "2 of 3 elements differ; worst at [0]: inf vs expected -inf (|diff| "
        "inf)");
}

TEST_CASE("safetensors compare: C64 uses complex magnitudes", "[safetensors][compare]") {
  Tensor a = C64({2}, {3.0f, 4.0f, 1.0f, 2.0f});
  // |(3, 4) - (3, 4.00003)| = 3e-5 < 1e-8 + 1e-5 * 5.
  CHECK(Compare(a, C64({2}, {3.0f, 4.00003f, 1.0f, 2.0f})).equal);

  CompareResult r = Compare(a, C64({2}, {3.0f, 4.0f, 1.0f, 2.5f}));
  CHECK_FALSE(r.equal);
  CHECK(r.worst_index == Index{1});
  CHECK(r.actual == "(1, 2)");
  CHECK(r.expected == "(1, 2.5)");
  CHECK(r.abs_diff == 0.5);
  CHECK(r.tolerance == Approx(1e-8 + 1e-5 * std::abs(std::complex<double>(1, 2.5))));

  const float nan = static_cast<float>(kNaN);
  Tensor n = C64({1}, {1.0f, nan});
  CHECK_FALSE(Compare(n, n).equal);
  CHECK(Compare(n, n, {.equal_nan = true}).equal);
}

TEST_CASE("safetensors compare: integers compare exactly, even above 2^53",
          "[safetensors][compare]") {
  const std::uint64_t big = (std::uint64_t{1} << 53) + 1;  // not a double
  Tensor a = Make(Dtype::kU64, {3}, Words(8, {7, big, 0xFFFFFFFFFFFFFFFF}));
  Tensor b = Make(Dtype::kU64, {3}, Words(8, {7, big - 1, 0xFFFFFFFFFFFFFFFF}));
  CompareResult r = Compare(a, b, {.rtol = 1.0, .atol = 100.0});  // tolerances ignored
  CHECK_FALSE(r.equal);
  CHECK(r.mismatches == 1);
  CHECK(r.worst_index == Index{1});
  CHECK(r.actual == "9007199254740993");
  CHECK(r.expected == "9007199254740992");
  CHECK(r.abs_diff == 1.0);
  CHECK(r.tolerance == 0.0);
  CHECK(r.message ==
        "1 of 3 elements differ; first at [1]: 9007199254740993 vs expected "
        "9007199254740992 (|diff| 1)");
  CHECK(Compare(a, a).equal);

  Tensor i64a = Make(Dtype::kI64, {1}, Words(8, {0x8000000000000000}));
  Tensor i64b = Make(Dtype::kI64, {1}, Words(8, {0x7FFFFFFFFFFFFFFF}));
  r = Compare(i64a, i64b);
  CHECK(r.message ==
        "1 of 1 elements differ; first at [0]: -9223372036854775808 vs expected "
        "9223372036854775807 (|diff| 18446744073709551615)");

  // The first mismatch is reported, not the largest.
  Tensor i8a = Make(Dtype::kI8, {2, 2}, Raw({0, 0xFF, 100, 0}));
  Tensor i8b = Make(Dtype::kI8, {2, 2}, Raw({0, 0x01, 0x9C, 0}));
  r = Compare(i8a, i8b);
  CHECK(r.mismatches == 2);
  CHECK(r.worst_index == Index{0, 1});
  CHECK(r.actual == "-1");
  CHECK(r.expected == "1");
  CHECK(r.abs_diff == 2.0);
}

TEST_CASE("safetensors compare: BOOL compares exactly", "[safetensors][compare]") {
  Tensor a = Make(Dtype::kBool, {3}, Raw({1, 0, 1}));
  CHECK(Compare(a, a).equal);
  CompareResult r = Compare(a, Make(Dtype::kBool, {3}, Raw({1, 1, 1})));
  CHECK(r.message ==
        "1 of 3 elements differ; first at [1]: false vs expected true (|diff| "
        "1)");
}

TEST_CASE("safetensors compare: packed F4 mismatches name the element", "[safetensors][compare]") {
  Tensor a = Make(Dtype::kF4, {2, 2}, Raw({0x21, 0x72}));
  Tensor b = Make(Dtype::kF4, {2, 2}, Raw({0x21, 0x62}));
  CompareResult r = Compare(a, b);
  CHECK(r.mismatches == 1);
  CHECK(r.worst_index == Index{1, 1});
  CHECK(r.actual == "6");
  CHECK(r.expected == "4");
}

TEST_CASE("safetensors compare: every floating dtype equals itself", "[safetensors][compare]") {
  std::vector<std::byte> bytes(48);  // whole elements of every width
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 37 + 11);
  for (Dtype dtype : AllDtypes()) {
    const std::uint64_t numel = bytes.size() * 8 / DtypeBits(dtype);
    Tensor t = Make(dtype, {numel}, bytes);
    INFO(DtypeName(dtype));
    CompareResult r = Compare(t, t, {.rtol = 0, .atol = 0, .equal_nan = true});
    CHECK(r.equal);
    CHECK(r.numel == numel);
  }
}

TEST_CASE("safetensors compare: dtype and shape differences are answers, not errors",
          "[safetensors][compare]") {
  Tensor f32 = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor f64 = F64({2, 3}, {1, 2, 3, 4, 5, 6});
  CompareResult r = Compare(f32, f64);
  CHECK_FALSE(r.equal);
  CHECK(r.mismatches == 0);
  CHECK(r.message == "dtype F32 vs expected F64");

  Tensor t = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  r = Compare(f32, t);
  CHECK_FALSE(r.equal);
  CHECK(r.message == "shape [2, 3] vs expected [3, 2]");

  r = Compare(F32({6}, {1, 2, 3, 4, 5, 6}), F32({1, 6}, {1, 2, 3, 4, 5, 6}));
  CHECK(r.message == "shape [6] vs expected [1, 6]");
}

TEST_CASE("safetensors compare: 0-rank and empty tensors", "[safetensors][compare]") {
  CompareResult r = Compare(F32({}, {2.0f}), F32({}, {2.0f}));
  CHECK(r.equal);
  CHECK(r.numel == 1);
  CHECK(r.message == "the one element matches");

  r = Compare(F32({}, {2.0f}), F32({}, {3.0f}));
  CHECK_FALSE(r.equal);
  CHECK(r.worst_index.empty());
  CHECK(r.message ==
        "1 of 1 elements differ; worst at []: 2 vs expected 3 (|diff| 1 > tol "
        "3.001e-05)");

  Tensor empty = Make(Dtype::kF32, {0, 3}, {});
  r = Compare(empty, empty);
  CHECK(r.equal);
  CHECK(r.numel == 0);
  CHECK(r.message == "no elements to compare");

  r = Compare(empty, Make(Dtype::kF32, {3, 0}, {}));
  CHECK_FALSE(r.equal);
  CHECK(r.message == "shape [0, 3] vs expected [3, 0]");
}

TEST_CASE("safetensors compare: a view of the wrong byte size is an error",
          "[safetensors][compare]") {
  Tensor good = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor bad = good;
  bad.data.resize(20);

  auto r = AllClose(bad.view(), good.view(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message() ==
        "actual tensor \"w\": F32 [2, 3] needs 24 bytes but the view has 20");

  // Checked even when the dtypes differ.
  Tensor bad64 = F64({1}, {1.0});
  bad64.data.push_back(std::byte{0});
  r = AllClose(good.view(), bad64.view(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "expected tensor \"w\": F64 [1] needs 8 bytes but the view has 9");

  Tensor huge = Make(Dtype::kF32, {std::uint64_t{1} << 62, 4}, {});
  r = AllClose(huge.view(), huge.view(), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("too many elements"));
}

TEST_CASE("safetensors compare: negative or NaN tolerances are an error",
          "[safetensors][compare]") {
  Tensor t = F32({1}, {1.0f});
  auto r = AllClose(t.view(), t.view(), {.rtol = -1e-5});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message() == "rtol -1e-05 and atol 1e-08 must be non-negative numbers");
  CHECK_FALSE(AllClose(t.view(), t.view(), {.atol = kNaN}).ok());
}

}  // namespace
}  // namespace carton::safetensors
