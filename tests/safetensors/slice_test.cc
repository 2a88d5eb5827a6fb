#include "carton/safetensors/slice.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

using namespace carton;
using namespace carton::safetensors;

namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// An I32 tensor named "a" holding 0, 1, 2, ... in C order.
Tensor Iota(std::vector<std::uint64_t> shape) {
  Tensor t;
  t.name = "a";
  t.dtype = Dtype::kI32;
  t.shape = std::move(shape);
  std::uint64_t n = *CheckedNumel(t.shape);
  t.data.resize(n * 4);
  for (std::uint64_t i = 0; i < n; ++i) {
    StoreLE32(t.data.data() + 4 * i, static_cast<std::uint32_t>(i));
  }
  return t;
}

std::vector<std::int32_t> Values(const Tensor& t) {
  std::vector<std::int32_t> v(t.data.size() / 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<std::int32_t>(LoadLE32(t.data.data() + 4 * i));
  }
  return v;
}

using Shape = std::vector<std::uint64_t>;
using Ints = std::vector<std::int32_t>;

// Parses `text`, slices `src` and checks the result against numpy's.
void CheckSlice(const Tensor& src, std::string_view text, const Shape& shape, const Ints& values) {
  INFO("slice [" << text << "] of " << ShapeToString(src.shape));
  auto indices = ParseSlice(text);
  REQUIRE(indices.ok());
  auto out = ReadSlice(src.view(), *indices);
  REQUIRE(out.ok());
  CHECK(out->name == src.name);
  CHECK(out->dtype == src.dtype);
  CHECK(out->shape == shape);
  CHECK(Values(*out) == values);
}

Status SliceError(const Tensor& src, std::span<const SliceIndex> indices) {
  return ReadSlice(src.view(), indices).status();
}

bool Contains(const Status& s, std::string_view part) {
  return s.message().find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("safetensors slice: ranges on a 2-D tensor match numpy", "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});  // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
  CheckSlice(a, "", {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CheckSlice(a, "1:3", {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  CheckSlice(a, ":, 1:3", {3, 2}, {1, 2, 5, 6, 9, 10});
  CheckSlice(a, ":, 1::2", {3, 2}, {1, 3, 5, 7, 9, 11});
  CheckSlice(a, "::2, ::3", {2, 2}, {0, 3, 8, 11});
  CheckSlice(a, ":-1, -3:-1", {2, 2}, {1, 2, 5, 6});
  CheckSlice(a, "-100:100, 2:", {3, 2}, {2, 3, 6, 7, 10, 11});
}

TEST_CASE("safetensors slice: negative step reverses a dimension", "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});
  CheckSlice(a, "::-1", {3, 4}, {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3});
  CheckSlice(a, ":, ::-1", {3, 4}, {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  CheckSlice(a, "::-2, ::-3", {2, 2}, {11, 8, 3, 0});
  CheckSlice(a, ":, 3:0:-1", {3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9});
  CheckSlice(a, "10::-1, -1:-3:-1", {3, 2}, {11, 10, 7, 6, 3, 2});
  CheckSlice(a, "-1:-100:-2", {2, 4}, {8, 9, 10, 11, 0, 1, 2, 3});
}

TEST_CASE("safetensors slice: integer index drops a dimension", "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});
  CheckSlice(a, "1", {4}, {4, 5, 6, 7});
  CheckSlice(a, "-1", {4}, {8, 9, 10, 11});
  CheckSlice(a, ":, -1", {3}, {3, 7, 11});
  CheckSlice(a, "::-1, 0", {3}, {8, 4, 0});
  CheckSlice(a, "1, 2", {}, {6});
  CheckSlice(a, "-3, -4", {}, {0});
}

TEST_CASE("safetensors slice: 3-D tensors match numpy", "[safetensors][slice]") {
  const Tensor b = Iota({2, 3, 4});
  CheckSlice(b, "1:", {1, 3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  CheckSlice(b, "0, 1:", {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  CheckSlice(b, ":, 1", {2, 4}, {4, 5, 6, 7, 16, 17, 18, 19});
  CheckSlice(b, ":, :, 0", {2, 3}, {0, 4, 8, 12, 16, 20});
  CheckSlice(b, ":, :, ::2", {2, 3, 2}, {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
  CheckSlice(b, "1, ::-1, 1:3", {3, 2}, {21, 22, 17, 18, 13, 14});
  CheckSlice(b, "::-1, ::2, ::-3", {2, 2, 2}, {15, 12, 23, 20, 3, 0, 11, 8});
  CheckSlice(b, "-1, -1, -1", {}, {23});
}

TEST_CASE("safetensors slice: empty ranges give zero-size dimensions", "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});
  CheckSlice(a, "2:1", {0, 4}, {});
  CheckSlice(a, "5:", {0, 4}, {});
  CheckSlice(a, "0:3:-1", {0, 4}, {});
  CheckSlice(a, "-10::-1", {0, 4}, {});
  CheckSlice(a, "1, 4:", {0}, {});
  CheckSlice(a, ":, 2:2", {3, 0}, {});

  auto plan = PlanSlice(a.view(), std::vector{SliceIndex::Range(2, 1)});
  REQUIRE(plan.ok());
  CHECK(plan->numel == 0);
  CHECK(plan->byte_size == 0);
  CHECK(ReadSliceInto(a.view(), std::vector{SliceIndex::Range(2, 1)}, {}).ok());
}

TEST_CASE("safetensors slice: zero-size source dimensions", "[safetensors][slice]") {
  const Tensor z = Iota({2, 0, 3});
  CheckSlice(z, "", {2, 0, 3}, {});
  CheckSlice(z, "1", {0, 3}, {});
  CheckSlice(z, ":, ::-1", {2, 0, 3}, {});
  CheckSlice(z, "::-1, :, 1", {2, 0}, {});

  Status s = SliceError(z, std::vector{SliceIndex::All(), SliceIndex::At(0)});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": dimension 1 of size 0: index 0 is out of range"));
}

TEST_CASE("safetensors slice: 0-rank tensor with no indices is the scalar",
          "[safetensors][slice]") {
  Tensor s = Iota({});
  StoreLE32(s.data.data(), 42);
  CheckSlice(s, "", {}, {42});

  Status err = SliceError(s, std::vector{SliceIndex::At(0)});
  CHECK(err.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(err, "tensor \"a\": 1 indices for 0 dimensions []"));
}

TEST_CASE("safetensors slice: extreme 64-bit values clamp like numpy", "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});
  auto out = ReadSlice(a.view(), std::vector{SliceIndex::Range(kMax, std::nullopt, kMin),
                                             SliceIndex::Range(kMin, kMax, kMax)});
  REQUIRE(out.ok());
  CHECK(out->shape == Shape{1, 1});
  CHECK(Values(*out) == Ints{8});

  out = ReadSlice(a.view(),
                  std::vector{SliceIndex::Range(kMin, kMin), SliceIndex::Range(kMax, kMin, -1)});
  REQUIRE(out.ok());
  CHECK(out->shape == Shape{0, 4});

  Status s = SliceError(a, std::vector{SliceIndex::At(kMin)});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "dimension 0 of size 3: index -9223372036854775808 is out of range"));
}

TEST_CASE("safetensors slice: ReadSliceInto fills an exact buffer", "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});
  const std::vector indices{SliceIndex::Range(std::nullopt, std::nullopt, -2), SliceIndex::At(1)};
  auto plan = PlanSlice(a.view(), indices);
  REQUIRE(plan.ok());
  CHECK(plan->shape == Shape{2});
  CHECK(plan->numel == 2);
  CHECK(plan->byte_size == 8);
  CHECK_FALSE(plan->whole);

  std::vector<std::byte> out(8);
  REQUIRE(ReadSliceInto(a.view(), indices, out).ok());
  CHECK(LoadLE32(out.data()) == 9);
  CHECK(LoadLE32(out.data() + 4) == 1);

  std::vector<std::byte> wrong(12);
  Status s = ReadSliceInto(a.view(), indices, wrong);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": output buffer has 12 bytes"));
  CHECK(Contains(s, "slice [::-2, 1] of I32 [3, 4] needs 8"));
}

TEST_CASE("safetensors slice: errors name the tensor, dimension and values",
          "[safetensors][slice]") {
  const Tensor a = Iota({3, 4});

  Status s = SliceError(a, std::vector{SliceIndex::All(), SliceIndex::Range(0, 2, 0)});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": dimension 1 of size 4: slice step cannot be zero"));

  s = SliceError(a, std::vector{SliceIndex::At(3)});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": dimension 0 of size 3: index 3 is out of range"));

  s = SliceError(a, std::vector{SliceIndex::At(0), SliceIndex::At(-5)});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": dimension 1 of size 4: index -5 is out of range"));

  s = SliceError(a, std::vector{SliceIndex::At(0), SliceIndex::At(0), SliceIndex::All()});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": 3 indices for 2 dimensions [3, 4]"));

  // A view whose bytes do not match its shape is refused before any read.
  TensorView short_view = a.view();
  short_view.data = short_view.data.first(44);
  s = PlanSlice(short_view, {}).status();
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(Contains(s, "tensor \"a\": I32 [3, 4] does not match its 44 bytes"));
}

TEST_CASE("safetensors slice: sub-byte dtypes are read only whole", "[safetensors][slice]") {
  Tensor f4;
  f4.name = "q";
  f4.dtype = Dtype::kF4;
  f4.shape = {1, 4};
  f4.data = {std::byte{0x21}, std::byte{0x43}};

  for (const char* text : {"", "0", ":, ::1", "-1:, -10:10", "0, ::"}) {
    INFO(text);
    auto out = ReadSlice(f4.view(), *ParseSlice(text));
    REQUIRE(out.ok());
    CHECK(out->data == f4.data);
  }
  auto dropped = ReadSlice(f4.view(), std::vector{SliceIndex::At(0)});
  REQUIRE(dropped.ok());
  CHECK(dropped->shape == Shape{4});

  auto empty = ReadSlice(f4.view(), *ParseSlice(":, 2:2"));
  REQUIRE(empty.ok());
  CHECK(empty->shape == Shape{1, 0});
  CHECK(empty->data.empty());

  for (const char* text : {":, 0:2", ":, ::-1", ":, 1"}) {
    INFO(text);
    Status s = ReadSlice(f4.view(), *ParseSlice(text)).status();
    CHECK(s.code() == StatusCode::kUnsupported);
    CHECK(Contains(s, "tensor \"q\": sub-byte dtype cannot be sliced"));
  }

  Tensor f6 = f4;
  f6.dtype = Dtype::kF6E2M3;
  f6.data.push_back(std::byte{0x65});
  Status s = ReadSlice(f6.view(), *ParseSlice(":, 1:")).status();
  CHECK(s.code() == StatusCode::kUnsupported);
  CHECK(Contains(s, "F6_E2M3 [1, 4] with [:, 1:]"));
}

TEST_CASE("safetensors slice: parses numpy index text", "[safetensors][slice]") {
  using I = SliceIndex;
  auto p = ParseSlice("1:3, :, ::-1, 0, -2:");
  REQUIRE(p.ok());
  CHECK(*p ==
        std::vector{I::Range(1, 3), I::All(), I::Range({}, {}, -1), I::At(0), I::Range(-2, {})});
  CHECK(SliceToString(*p) == "1:3, :, ::-1, 0, -2:");

  CHECK(ParseSlice("")->empty());
  CHECK(ParseSlice(" \t ")->empty());
  CHECK(*ParseSlice("\t+5 : -1 : 2 ") == std::vector{I::Range(5, -1, 2)});
  CHECK(*ParseSlice("::") == std::vector{I::All()});
  CHECK(*ParseSlice(":3:,-0") == std::vector{I::Range({}, 3), I::At(0)});
  CHECK(*ParseSlice("-9223372036854775808:9223372036854775807") ==
        std::vector{I::Range(kMin, kMax)});

  // SliceToString reads back to an equal list.
  for (const auto& indices : {std::vector{I::Range(kMin, kMax, kMin), I::At(kMin)},
                              std::vector{I::Range({}, {}, 1), I::Range(0, {}), I::At(-1)}}) {
    auto again = ParseSlice(SliceToString(indices));
    REQUIRE(again.ok());
    CHECK(*again == indices);
  }
}

TEST_CASE("safetensors slice: parse errors name the position", "[safetensors][slice]") {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"1,,2", "empty index in slice at position 2"},
      {"1,", "empty index in slice at position 2"},
      {",1", "empty index in slice at position 0"},
      {" , ", "empty index in slice at position 1"},
      {"9223372036854775808", "integer at position 0 does not fit in 64 bits"},
      {"1, -9223372036854775809", "integer at position 3 does not fit in 64 bits"},
      {"::99999999999999999999999", "integer at position 2 does not fit in 64 bits"},
      {"1:2:3:4", "more than two ':' in one index at position 5"},
      {"::0", "slice step cannot be zero at position 2"},
      {"1 : 2 : -0", "slice step cannot be zero at position 8"},
      {"a", "unexpected 'a' in slice at position 0"},
      {"1 2", "unexpected '2' in slice at position 2"},
      {"0, ...", "unexpected '.' in slice at position 3"},
      {"[1]", "unexpected '[' in slice at position 0"},
      {"1\x01", "unexpected byte 0x01 in slice at position 1"},
      {std::string("1:\0", 3), "unexpected byte 0x00 in slice at position 2"},
      {"-", "expected a digit after '-' at position 1"},
      {"1:+", "expected a digit after '+' at position 3"},
      {"1:--2", "expected a digit after '-' at position 3"},
  };
  for (const auto& c : cases) {
    INFO("text: " << c.text);
    auto p = ParseSlice(c.text);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::kInvalidArgument);
    CHECK(p.status().message() == c.message);
  }
}

// An independent, element-at-a-time model of numpy indexing, written from
// CPython's PySlice_AdjustIndices, to compare the copy against.
namespace {

std::vector<std::int64_t> ModelIndices(const SliceIndex& index, std::int64_t len) {
  if (index.kind == SliceIndex::Kind::kInteger) {
    return {index.index < 0 ? index.index + len : index.index};
  }
  const std::int64_t step = index.step.value_or(1);
  auto adjust = [&](std::optional<std::int64_t> v, std::int64_t absent) {
    if (!v) return absent;
    std::int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= len) {
      x = step < 0 ? len - 1 : len;
    }
    return x;
  };
  std::int64_t start = adjust(index.start, step < 0 ? len - 1 : 0);
  std::int64_t stop = adjust(index.stop, step < 0 ? -1 : len);
  std::vector<std::int64_t> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("safetensors slice: random slices of a 3-D tensor match a model",
          "[safetensors][slice]") {
  const Tensor t = Iota({3, 4, 5});
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto maybe = [&](int lo, int hi) -> std::optional<std::int64_t> {
    if (pick(0, 3) == 0) return std::nullopt;
    return pick(lo, hi);
  };
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<SliceIndex> indices;
    const std::size_t n = static_cast<std::size_t>(pick(0, 3));
    for (std::size_t d = 0; d < n; ++d) {
      const int len = static_cast<int>(t.shape[d]);
      if (pick(0, 4) == 0) {
        indices.push_back(SliceIndex::At(pick(-len, len - 1)));
      } else {
        std::optional<std::int64_t> step = maybe(-3, 3);
        if (step == 0) step = -1;
        indices.push_back(SliceIndex::Range(maybe(-7, 7), maybe(-7, 7), step));
      }
    }
    INFO("slice [" << SliceToString(indices) << "]");

    std::vector<std::vector<std::int64_t>> picks(3);
    Shape shape;
    for (std::size_t d = 0; d < 3; ++d) {
      const auto len = static_cast<std::int64_t>(t.shape[d]);
      picks[d] = d < n ? ModelIndices(indices[d], len) : ModelIndices(SliceIndex::All(), len);
      if (d >= n || indices[d].kind == SliceIndex::Kind::kRange) shape.push_back(picks[d].size());
    }
    Ints expected;
    for (auto i : picks[0]) {
      for (auto j : picks[1]) {
        for (auto k : picks[2]) expected.push_back(static_cast<std::int32_t>((i * 4 + j) * 5 + k));
      }
    }

    auto out = ReadSlice(t.view(), indices);
    REQUIRE(out.ok());
    CHECK(out->shape == shape);
    CHECK(Values(*out) == expected);
  }
}
