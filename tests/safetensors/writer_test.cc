#include "carton/safetensors/writer.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <numeric>

#include "carton/safetensors/file.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;

TEST_CASE("safetensors writer: bytes equal the reference writer's", "[safetensors][writer]") {
  std::vector<std::byte> a(8), b(3);
  std::vector<TensorSource> ts = {{"b", Dtype::kI8, {3}, b, {}}, {"a", Dtype::kF32, {2}, a, {}}};
  auto out = Serialize(ts, {{"k", "v"}});
  REQUIRE(out.ok());
  REQUIRE(out->size() == 155);
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I8","shape":[3],"data_offsets":[8,11]}})"
      "    ";
  std::vector<std::byte> expected = testing::RawSafetensors(header, 11);
  CHECK(LoadLE64(out->data()) == 136);
  CHECK(*out == expected);
}

TEST_CASE("safetensors writer: empty metadata is left out unless it is to be kept",
          "[safetensors][writer]") {
  std::vector<std::byte> four(4);
  std::vector<TensorSource> ts = {{"t", Dtype::kI32, {1}, four, {}}};
  auto plain = Serialize(ts, {});
  REQUIRE(plain.ok());
  CHECK(*plain ==
        testing::RawSafetensors(R"({"t":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})"
                                "  ",
                                4));
  WriteOptions keep;
  keep.keep_empty_metadata = true;
  auto kept = Serialize(ts, {}, keep);
  REQUIRE(kept.ok());
  CHECK(*kept ==
        testing::RawSafetensors(
            R"({"__metadata__":{},"t":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", 4));
  auto f = File::FromBuffer(*kept);
  REQUIRE(f.ok());
  CHECK(f->has_metadata());
  CHECK(f->metadata().empty());
}

TEST_CASE("safetensors writer: orders by dtype as the reference does, then name",
          "[safetensors][writer]") {
  std::vector<std::byte> four(4), one(1), eight(8);
  std::vector<TensorSource> ts = {{"z", Dtype::kU8, {1}, one, {}},
                                  {"y", Dtype::kI32, {1}, four, {}},
                                  {"x", Dtype::kF32, {1}, four, {}},
                                  {"w", Dtype::kU64, {1}, eight, {}},
                                  {"v", Dtype::kF32, {1}, four, {}}};
  auto out = Serialize(ts);
  REQUIRE(out.ok());
  auto f = File::FromBuffer(*out);
  REQUIRE(f.ok());
  std::vector<std::string_view> order;
  for (auto& t : f->tensors()) order.push_back(t.name);
  CHECK(order == std::vector<std::string_view>{"w", "v", "x", "y", "z"});
}

TEST_CASE("safetensors writer: round-trips every dtype, empty and 0-rank tensors",
          "[safetensors][writer]") {
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorSource> ts;
  for (Dtype d : AllDtypes()) {
    std::vector<std::uint64_t> shape = {2, 4};
    std::uint64_t size = *ByteSize(d, 8);
    storage.emplace_back(size);
    for (std::size_t i = 0; i < size; ++i) storage.back()[i] = std::byte(i * 7 + 1);
    ts.push_back({"t_" + std::string(DtypeName(d)), d, shape, storage.back(), {}});
    ts.push_back({"empty_" + std::string(DtypeName(d)), d, {0, 5}, {}, {}});
    if (DtypeBits(d) >= 8) {
      storage.emplace_back(DtypeBits(d) / 8, std::byte{0x5a});
      ts.push_back({"scalar_" + std::string(DtypeName(d)), d, {}, storage.back(), {}});
    }
  }
  Metadata meta = {{"format", "pt"}, {"z", ""}, {"ünï\"\\\n", "値"}};
  auto out = Serialize(ts, meta);
  REQUIRE(out.ok());
  auto f = File::FromBuffer(*out);
  REQUIRE(f.ok());
  CHECK(f->size() == ts.size());
  CHECK(f->metadata() == meta);
  for (const auto& t : ts) {
    const TensorView* v = f->Find(t.name);
    REQUIRE(v != nullptr);
    CHECK(v->dtype == t.dtype);
    CHECK(std::vector<std::uint64_t>(v->shape.begin(), v->shape.end()) == t.shape);
    CHECK(std::equal(v->data.begin(), v->data.end(), t.bytes.begin(), t.bytes.end()));
  }
}

TEST_CASE("safetensors writer: names and metadata of any UTF-8 round-trip",
          "[safetensors][writer]") {
  std::vector<std::byte> one(1);
  std::vector<std::string> names = {
      "",        "a b",  "\"quoted\"",    "back\\slash", "tab\there", "ctrl\x01\x1f",
      "emoji 😀", "中文", "slash/dot.name"};
  std::vector<TensorSource> ts;
  for (auto& n : names) ts.push_back({n, Dtype::kU8, {}, one, {}});
  std::vector<std::byte> data(names.size());
  auto out = Serialize(ts);
  REQUIRE(out.ok());
  auto f = File::FromBuffer(*out);
  REQUIRE(f.ok());
  for (auto& n : names) CHECK(f->Find(n) != nullptr);
}

TEST_CASE("safetensors writer: refuses invalid input", "[safetensors][writer]") {
  std::vector<std::byte> one(1), two(2);
  auto fails = [](std::vector<TensorSource> ts, std::string_view substring, Metadata m = {}) {
    auto out = Serialize(ts, m);
    REQUIRE_FALSE(out.ok());
    CHECK(out.status().code() == StatusCode::kInvalidArgument);
    INFO(out.status().message());
    CHECK(out.status().message().find(substring) != std::string::npos);
  };
  fails({{"a", Dtype::kU8, {1}, one, {}}, {"a", Dtype::kU8, {1}, one, {}}},
        "duplicate tensor name \"a\"");
  fails({{"__metadata__", Dtype::kU8, {1}, one, {}}}, "__metadata__");
  fails({{"a", Dtype::kU8, {1}, two, {}}}, "2 bytes given but U8 [1] needs 1");
  fails({{"a", Dtype::kF4, {3}, two, {}}}, "not a whole number of bytes");
  fails({{"a", Dtype::kF32, {1ull << 62, 4}, {}, {}}}, "overflows");
  fails({{"bad\xff", Dtype::kU8, {1}, one, {}}}, "not valid UTF-8");
  fails({}, "not valid UTF-8", {{"k", "\xc3"}});
  WriteOptions odd;
  odd.alignment = 24;
  auto out = Serialize({}, {}, odd);
  CHECK(out.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("safetensors writer: aligns the data section on request", "[safetensors][writer]") {
  std::vector<std::byte> a(12);
  std::vector<TensorSource> ts = {{"a", Dtype::kF32, {3}, a, {}}};
  for (std::uint64_t align : {8ull, 64ull, 4096ull}) {
    WriteOptions o;
    o.alignment = align;
    auto out = Serialize(ts, {}, o);
    REQUIRE(out.ok());
    auto f = File::FromBuffer(*out);
    REQUIRE(f.ok());
    CHECK(f->data_start() % align == 0);
    CHECK(f->Find("a")->data.size() == 12);
  }
}

TEST_CASE("safetensors writer: streams tensors to a file atomically", "[safetensors][writer]") {
  testing::TempDir dir;
  const std::uint64_t n = 3 << 20;  // more than one buffer's worth of chunks
  TensorSource big{"big", Dtype::kU8, {n}, {}, [&](const ByteSink& sink) -> Status {
                     std::vector<std::byte> chunk(1000);
                     for (std::uint64_t done = 0; done < n; done += chunk.size()) {
                       std::size_t len = std::min<std::uint64_t>(chunk.size(), n - done);
                       for (std::size_t i = 0; i < len; ++i) chunk[i] = std::byte((done + i) % 251);
                       CARTON_RETURN_IF_ERROR(sink(ByteView(chunk).first(len)));
                     }
                     return Status::Ok();
                   }};
  std::string path = dir.file("s.safetensors");
  REQUIRE(WriteFile(path, {&big, 1}).ok());
  auto f = File::Open(path);
  REQUIRE(f.ok());
  auto data = f->Find("big")->data;
  REQUIRE(data.size() == n);
  CHECK(data[n - 1] == std::byte((n - 1) % 251));

  // A stream that stops short leaves nothing behind and keeps the old file.
  TensorSource shortfall{"big", Dtype::kU8, {n}, {}, [](const ByteSink& sink) {
                           std::vector<std::byte> c(10);
                           return sink(c);
                         }};
  Status s = WriteFile(path, {&shortfall, 1});
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("stream gave 10 bytes, expected 3145728") != std::string::npos);
  CHECK(s.message().find(path) == 0);
  CHECK(std::filesystem::file_size(path) == f->bytes().size());
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                      std::filesystem::directory_iterator()) == 1);

  TensorSource overflow{"x", Dtype::kU8, {1}, {}, [](const ByteSink& sink) {
                          std::vector<std::byte> c(2);
                          return sink(c);
                        }};
  CHECK_FALSE(WriteFile(dir.file("o.safetensors"), {&overflow, 1}).ok());
  CHECK_FALSE(std::filesystem::exists(dir.file("o.safetensors")));
}

TEST_CASE("safetensors writer: a written file takes its mode from the umask",
          "[safetensors][writer]") {
  testing::TempDir dir;
  std::vector<std::byte> a(8);
  std::vector<TensorSource> ts = {{"a", Dtype::kF32, {2}, a, {}}};
  for (mode_t mask : {mode_t{022}, mode_t{077}}) {
    const std::string path = dir.file("m" + std::to_string(mask) + ".safetensors");
    mode_t old = ::umask(mask);
    Status s = WriteFile(path, ts);
    ::umask(old);
    REQUIRE(s.ok());
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == (0666 & ~mask));
    auto bytes = Serialize(ts);
    REQUIRE(bytes.ok());
    CHECK(testing::ReadText(path) == std::string(AsChars(*bytes)));
  }
}
