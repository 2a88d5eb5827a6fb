#include "carton/zip/layout.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "carton/zip/reader.h"
#include "carton/zip/writer.h"
#include "testing.h"

using namespace carton;
using carton::testing::TempDir;

namespace {

// Deterministic bytes that compress somewhat (a small alphabet with runs).
std::vector<std::byte> Pattern(std::size_t n, std::uint64_t seed = 1) {
  std::vector<std::byte> out(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<std::byte>((x >> 60) + 'a');
  }
  return out;
}

struct Planned {
  std::string name;
  Compression method;
  std::size_t size;  // 0 and kStored with a trailing '/' name: a directory
};

}  // namespace

TEST_CASE("carton zip: PlaceZipEntry gives the offsets ZipWriter writes", "[zip][layout]") {
  const std::vector<Planned> plan = {
      {"model/", Compression::kStored, 0},
      {"model/a", Compression::kStored, 100},
      {"model/b.txt", Compression::kDeflate, 5000},
      {"model/c", Compression::kStored, 1},
      {"z", Compression::kZstd, 70000},
      {"model/empty", Compression::kStored, 0},
      {"last", Compression::kStored, 4097},
  };
  for (std::uint32_t alignment : {1u, 2u, 64u, 4096u}) {
    INFO("alignment " << alignment);
    TempDir tmp;
    const std::string path = tmp.file("a.zip");
    ZipWriterOptions options;
    options.alignment = alignment;
    auto w = ZipWriter::Create(path, options);
    REQUIRE(w.ok());
    std::uint64_t next = 0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const Planned& p = plan[i];
      INFO(p.name);
      if (p.name.back() == '/') {
        REQUIRE(w->AddDirectory(p.name).ok());
        next = PlaceZipDirectory(next, p.name.size());
        continue;
      }
      auto added = w->AddBytes(p.name, Pattern(p.size, i + 1), p.method);
      REQUIRE(added.ok());
      const ZipEntryPlacement at = PlaceZipEntry(next, p.name.size(), p.method, added->size,
                                                 added->compressed_size, alignment);
      CHECK(at.data_offset == added->data_offset);
      if (p.method == Compression::kStored) {
        CHECK(at.data_offset % alignment == 0);
      } else {
        CHECK(at.alignment_field == 0);
      }
      next = at.next_header;
    }
    REQUIRE(w->Finish().ok());
    auto zip = ZipReader::Open(path);
    REQUIRE(zip.ok());
    // The prediction is where the data really is, and the central directory
    // starts where the last entry's data ends.
    next = 0;
    for (const ZipEntry& e : zip->entries()) {
      INFO(e.name);
      if (e.is_dir) {
        next = PlaceZipDirectory(next, e.name.size());
        continue;
      }
      const Compression method = *CompressionFromZipMethod(e.method);
      const ZipEntryPlacement at =
          PlaceZipEntry(next, e.name.size(), method, e.size, e.compressed_size, alignment);
      if (method == Compression::kStored) {
        auto offset = zip->DataOffset(e.name);
        REQUIRE(offset.ok());
        CHECK(*offset == at.data_offset);
      }
      next = at.next_header;
    }
    CHECK(next < zip->archive().size());
  }
}

TEST_CASE("carton zip: PlaceZipEntry pads a stored entry to the alignment", "[zip][layout]") {
  // A 30-byte header and a 2-byte name end at 32: 32 more bytes reach 64,
  // and the field holds at least its 4-byte header and 2-byte alignment.
  ZipEntryPlacement p = PlaceZipEntry(0, 2, Compression::kStored, 10, 10, 64);
  CHECK(p.alignment_field == 32);
  CHECK(p.data_offset == 64);
  CHECK(p.next_header == 74);
  // 4 bytes short of the alignment: too small for a field, so one more step.
  p = PlaceZipEntry(0, 30, Compression::kStored, 10, 10, 64);
  CHECK(p.alignment_field == 68);
  CHECK(p.data_offset == 128);
  // Already aligned, or compressed, or alignment 1: no field.
  CHECK(PlaceZipEntry(2, 0, Compression::kStored, 1, 1, 32).alignment_field == 0);
  CHECK(PlaceZipEntry(0, 2, Compression::kDeflate, 10, 7, 64).data_offset == 32);
  CHECK(PlaceZipEntry(0, 2, Compression::kStored, 10, 10, 1).data_offset == 32);
  // A size of 0xFFFFFFFF or more adds a zip64 field: 4 bytes with both
  // sizes exactly 0xFFFFFFFF, 20 when one is larger.
  CHECK(PlaceZipEntry(0, 2, Compression::kZstd, 0xFFFFFFFFull, 0xFFFFFFFFull, 1).data_offset == 36);
  CHECK(PlaceZipEntry(0, 2, Compression::kZstd, 0x100000000ull, 1000, 1).data_offset == 52);
}

TEST_CASE("carton zip: ZipEntryCompressesTo finds the level an entry was written with",
          "[zip][layout]") {
  TempDir tmp;
  const std::string path = tmp.file("a.zip");
  const std::vector<std::byte> data = Pattern(300000);
  auto w = ZipWriter::Create(path);
  REQUIRE(w.ok());
  REQUIRE(w->AddBytes("d", data, Compression::kDeflate, 9).ok());
  REQUIRE(w->AddBytes("z", data, Compression::kZstd, 3).ok());
  REQUIRE(w->AddBytes("s", data, Compression::kStored).ok());
  REQUIRE(w->Finish().ok());
  auto zip = ZipReader::Open(path);
  REQUIRE(zip.ok());
  const ZipEntry& d = *zip->Find("d");
  const ZipEntry& z = *zip->Find("z");

  auto compresses_to = [&](const ZipEntry& e, Compression method, int level, int workers) {
    auto r = ZipEntryCompressesTo(*zip, e, method, level, workers);
    REQUIRE(r.ok());
    return *r;
  };
  CHECK(compresses_to(d, Compression::kDeflate, 9, 0));
  CHECK_FALSE(compresses_to(d, Compression::kDeflate, 1, 0));
  CHECK_FALSE(compresses_to(d, Compression::kZstd, 3, 0));
  // ZipWriterOptions' default: zstd on the calling thread.
  CHECK(compresses_to(z, Compression::kZstd, 3, 0));
  CHECK_FALSE(compresses_to(z, Compression::kZstd, 19, 0));
  // Stored entries have no encoder, and levels the method lacks are no.
  CHECK_FALSE(compresses_to(*zip->Find("s"), Compression::kStored, 0, 0));
  CHECK_FALSE(compresses_to(d, Compression::kDeflate, 42, 0));
}

TEST_CASE("carton zip: layout.h applies the writer's name and level rules", "[zip][layout]") {
  CHECK_FALSE(ZipEntryNameProblem("model/a.bin").has_value());
  CHECK_FALSE(ZipEntryNameProblem("model/").has_value());
  auto dotdot = ZipEntryNameProblem("model/../a");
  REQUIRE(dotdot.has_value());
  CHECK(*dotdot == "has a \"..\" component");
  CHECK(ZipEntryNameProblem("/a") == std::optional<std::string>("is absolute"));
  CHECK(QuoteZipEntryName(std::string("a\x01", 2)) == "\"a\\x01\"");

  CHECK(ResolveZipLevel(Compression::kDeflate, 0).value() == 6);
  CHECK(ResolveZipLevel(Compression::kZstd, 0).value() == 2);
  CHECK(ResolveZipLevel(Compression::kZstd, 19).value() == 19);
  auto bad = ResolveZipLevel(Compression::kDeflate, 10);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "deflate level 10 is outside 1..9");
  CHECK_FALSE(ResolveZipLevel(Compression::kZstd, kZipMaxZstdLevel + 1).ok());
}
