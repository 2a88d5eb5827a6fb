// ZipReader::OpenSource: archives read through a RandomAccessSource (what
// cartons given by URL use), checked like ZipReader::Open's.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/random_access.h"
#include "carton/zip/reader.h"
#include "carton/zip/writer.h"
#include "testing.h"

using namespace carton;
using carton::testing::TempDir;

namespace {

// Bytes in memory, counting what is read.
class CountingSource final : public RandomAccessSource {
 public:
  explicit CountingSource(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  std::uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    if (!InBounds(offset, out.size(), bytes_.size())) return InvalidArgument("past the end");
    std::memcpy(out.data(), bytes_.data() + offset, out.size());
    read_ += out.size();
    return Status::Ok();
  }
  std::uint64_t read() const { return read_; }

 private:
  std::vector<std::byte> bytes_;
  std::string name_ = "mem";
  mutable std::atomic<std::uint64_t> read_{0};
};

std::vector<std::byte> Pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>((x >> 60) + 'a');
  }
  return out;
}

std::vector<std::byte> Archive(const TempDir& dir, std::size_t big = 0) {
  const std::string path = dir.file("a.zip");
  auto w = ZipWriter::Create(path, {.alignment = 1});
  REQUIRE(w.ok());
  REQUIRE(w->AddBytes("a", Pattern(3000, 1), Compression::kDeflate).ok());
  REQUIRE(w->AddBytes("b/c", Pattern(70000, 2), Compression::kZstd).ok());
  REQUIRE(w->AddBytes("d", Pattern(300, 3), Compression::kStored).ok());
  REQUIRE(w->AddBytes("empty", {}, Compression::kStored).ok());
  if (big > 0) REQUIRE(w->AddBytes("big", std::vector<std::byte>(big), Compression::kStored).ok());
  REQUIRE(w->AddDirectory("e").ok());
  REQUIRE(w->AddBytes("z", Pattern(100, 4), Compression::kDeflate).ok());
  REQUIRE(w->Finish().ok());
  auto bytes = ReadFile(path);
  REQUIRE(bytes.ok());
  return *bytes;
}

}  // namespace

TEST_CASE("carton zip source: entries read through a source match Open's", "[zip][source]") {
  TempDir dir;
  const auto bytes = Archive(dir);
  auto direct = ZipReader::Open(dir.file("a.zip"));
  REQUIRE(direct.ok());
  auto file_source = OpenFileSource(dir.file("a.zip"));
  REQUIRE(file_source.ok());
  auto z = ZipReader::OpenSource(std::move(file_source).value());
  REQUIRE(z.ok());
  REQUIRE(z->entries().size() == direct->entries().size());
  for (const auto& e : direct->entries()) {
    const ZipEntry* s = z->Find(e.name);
    REQUIRE(s != nullptr);
    CHECK(s->size == e.size);
    CHECK(s->method == e.method);
    CHECK(s->is_dir == e.is_dir);
    if (e.is_dir) continue;
    auto a = direct->Read(e.name);
    auto b = z->Read(e.name);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
  }
  auto mapped = z->MappedData("d");
  CHECK(mapped.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("carton zip source: opening reads only the tail", "[zip][source]") {
  TempDir dir;
  auto source = std::make_unique<CountingSource>(Archive(dir, 4 << 20));
  const CountingSource* counter = source.get();
  auto z = ZipReader::OpenSource(std::move(source));
  REQUIRE(z.ok());
  CHECK(counter->read() <= 8192);
  REQUIRE(z->Read("z").ok());
  REQUIRE(z->Read("a").ok());
  CHECK(counter->read() < 20000);
  CHECK(z->Find("big")->size == 4u << 20);
}

TEST_CASE("carton zip source: a local header that disagrees fails when read",
          "[zip][source][corrupt]") {
  TempDir dir;
  auto bytes = Archive(dir);
  // The first "b/c" is the local header's name; the central one stays.
  auto it = std::search(bytes.begin(), bytes.end(), AsBytes("b/c").begin(), AsBytes("b/c").end());
  REQUIRE(it != bytes.end());
  std::memcpy(&*it, "b/x", 3);
  auto z = ZipReader::OpenSource(std::make_unique<CountingSource>(bytes));
  REQUIRE(z.ok());
  CHECK(z->Read("a").ok());
  auto r = z->Read("b/c");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kCorrupt);
  CHECK(r.status().message().find("mem: entry \"b/c\": local header name \"b/x\"") == 0);
}

TEST_CASE("carton zip source: damaged archives give errors, never crashes",
          "[zip][source][corrupt]") {
  TempDir dir;
  const auto original = Archive(dir);
  std::uint64_t x = 987654321;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int opened = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    auto bytes = original;
    const int flips = 1 + static_cast<int>(next() % 3);
    for (int k = 0; k < flips; ++k) {
      const std::size_t at =
          next() % 2 ? next() % bytes.size()
                     : bytes.size() - 1 - next() % std::min<std::size_t>(bytes.size(), 400);
      bytes[at] = static_cast<std::byte>(next());
    }
    if (next() % 8 == 0) bytes.resize(next() % bytes.size());
    auto z = ZipReader::OpenSource(std::make_unique<CountingSource>(bytes));
    if (!z.ok()) {
      CHECK(z.status().code() != StatusCode::kInternal);
      continue;
    }
    ++opened;
    for (const auto& e : z->entries()) {
      if (e.is_dir || e.encrypted || !CompressionFromZipMethod(e.method)) continue;
      auto r = z->Read(e.name);
      if (!r.ok()) CHECK(r.status().code() != StatusCode::kInternal);
    }
  }
  CHECK(opened > 0);
}
