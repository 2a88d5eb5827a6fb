#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/reader.h"
#include "carton/zip/writer.h"
#include "testing.h"

using namespace carton;
using carton::testing::Bytes;
using carton::testing::FileSizeLimit;
using carton::testing::ListDir;
using carton::testing::Run;
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

std::vector<std::byte> ReadAll(const std::string& path) {
  auto r = ReadFile(path);
  REQUIRE(r.ok());
  return *r;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

const Compression kAllMethods[] = {Compression::kStored, Compression::kDeflate, Compression::kZstd};

// Writes `entries` (name -> bytes) with `method` and finishes.
void WriteArchive(const std::string& path,
                  const std::vector<std::pair<std::string, std::vector<std::byte>>>& entries,
                  Compression method, ZipWriterOptions options = {}) {
  auto w = ZipWriter::Create(path, options);
  REQUIRE(w.ok());
  for (const auto& [name, data] : entries) {
    auto r = w->AddBytes(name, data, method);
    REQUIRE(r.ok());
  }
  REQUIRE(w->Finish().ok());
}

// Replaces every occurrence of `from` with `to` (same length) in `bytes`.
int ReplaceAll(std::vector<std::byte>* bytes, std::string_view from, std::string_view to) {
  REQUIRE(from.size() == to.size());
  int count = 0;
  auto b = AsBytes(from);
  for (auto it = bytes->begin();;) {
    it = std::search(it, bytes->end(), b.begin(), b.end());
    if (it == bytes->end()) break;
    std::memcpy(&*it, to.data(), to.size());
    it += static_cast<std::ptrdiff_t>(to.size());
    ++count;
  }
  return count;
}

// Runs a python3 script that writes a zip archive at argv[1].
void PythonZip(const TempDir& dir, const std::string& archive, const std::string& body) {
  std::string script = dir.file("make_zip.py");
  testing::WriteBytes(script, AsBytes("import sys, zipfile, warnings\n"
                                      "warnings.simplefilter('ignore')\n"
                                      "z = zipfile.ZipFile(sys.argv[1], 'w')\n" +
                                      body + "z.close()\n"));
  auto r = Run("python3 " + Quote(script) + " " + Quote(archive));
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("carton zip: round trip for stored, deflate and zstd entries", "[zip]") {
  TempDir dir;
  const auto big = Pattern(3 << 20);
  testing::WriteBytes(dir.file("big.bin"), big);
  testing::WriteBytes(dir.file("empty.bin"), {});
  for (Compression method : kAllMethods) {
    INFO(CompressionName(method));
    std::string path = dir.file("a.zip");
    {
      auto w = ZipWriter::Create(path);
      REQUIRE(w.ok());
      REQUIRE(w->AddDirectory("model").ok());
      REQUIRE(w->AddBytes("model/empty", {}, method).ok());
      REQUIRE(w->AddBytes("model/small.txt", AsBytes("hello, carton\n"), method).ok());
      REQUIRE(w->AddFile("model/empty_file", dir.file("empty.bin"), method).ok());
      ZipAddOptions add;
      add.sha256 = true;
      std::uint64_t observed = 0;
      add.observer = [&](ByteView b) { observed += b.size(); };
      auto r = w->AddFile("model/big.bin", dir.file("big.bin"), method, 0, add);
      REQUIRE(r.ok());
      CHECK(r->size == big.size());
      CHECK(observed == big.size());
      REQUIRE(r->sha256.has_value());
      CHECK(*r->sha256 == manifest::Sha256Of(big));
      if (method != Compression::kStored) CHECK(r->compressed_size < big.size());
      REQUIRE(w->AddBytes("ünïcode/名前.bin", big, method).ok());
      CHECK(w->entry_count() == 6);
      REQUIRE(w->Finish().ok());
    }
    auto z = ZipReader::Open(path);
    REQUIRE(z.ok());
    const auto& es = z->entries();
    REQUIRE(es.size() == 6);
    CHECK(es[0].name == "model/");
    CHECK(es[0].is_dir);
    CHECK(es[1].name == "model/empty");
    CHECK(es[4].name == "model/big.bin");
    CHECK(es[4].method == ZipMethodNumber(method));
    CHECK(es[4].size == big.size());
    CHECK_FALSE(es[4].is_symlink);
    CHECK_FALSE(es[4].encrypted);
    for (std::string name : {"model/empty", "model/empty_file"}) {
      auto e = z->Read(name);
      REQUIRE(e.ok());
      CHECK(e->empty());
    }
    auto small = z->Read("model/small.txt");
    REQUIRE(small.ok());
    CHECK(*small == Bytes("hello, carton\n"));
    for (std::string name : {"model/big.bin", "ünïcode/名前.bin"}) {
      auto b = z->Read(name);
      REQUIRE(b.ok());
      CHECK(*b == big);
      std::vector<std::byte> streamed;
      REQUIRE(z->ReadTo(name, [&](ByteView chunk) {
                 streamed.insert(streamed.end(), chunk.begin(), chunk.end());
                 return Status::Ok();
               }).ok());
      CHECK(streamed == big);
    }
    auto missing = z->Read("nope");
    CHECK(missing.status().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("carton zip: the same input gives byte-identical archives", "[zip]") {
  TempDir dir;
  auto write = [&](const std::string& path) {
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("carton.toml", AsBytes("spec_version = 1\n"), Compression::kDeflate).ok());
    REQUIRE(w->AddBytes("model/a", Pattern(100000, 2), Compression::kZstd, 5).ok());
    REQUIRE(w->AddBytes("model/b", Pattern(5000, 3), Compression::kStored).ok());
    REQUIRE(w->AddDirectory("misc/").ok());
    REQUIRE(w->Finish().ok());
  };
  write(dir.file("one.zip"));
  write(dir.file("two.zip"));
  CHECK(ReadAll(dir.file("one.zip")) == ReadAll(dir.file("two.zip")));
}

TEST_CASE("carton zip: stored data is aligned and mapped in place", "[zip]") {
  TempDir dir;
  for (std::uint32_t alignment : {64u, 4096u}) {
    INFO(alignment);
    ZipWriterOptions options;
    options.alignment = alignment;
    std::string path = dir.file("aligned.zip");
    std::vector<std::pair<std::string, std::vector<std::byte>>> stored;
    {
      auto w = ZipWriter::Create(path, options);
      REQUIRE(w.ok());
      for (int i = 0; i < 12; ++i) {
        // Compressed entries in between shift later offsets unpredictably.
        std::string name = "tensor_data/" + std::string(static_cast<std::size_t>(i), 'n');
        REQUIRE(w->AddBytes(name + ".z", Pattern(1000 + 37 * i, i), Compression::kDeflate).ok());
        stored.emplace_back(name, Pattern(static_cast<std::size_t>(i) * 301, i + 100));
        auto r = w->AddBytes(name, stored.back().second, Compression::kStored);
        REQUIRE(r.ok());
        CHECK(r->data_offset % alignment == 0);
      }
      REQUIRE(w->Finish().ok());
    }
    auto z = ZipReader::Open(path);
    REQUIRE(z.ok());
    for (const auto& [name, data] : stored) {
      auto off = z->DataOffset(name);
      REQUIRE(off.ok());
      CHECK(*off % alignment == 0);
      auto view = z->MappedData(name);
      REQUIRE(view.ok());
      CHECK(std::equal(view->begin(), view->end(), data.begin(), data.end()));
      CHECK(reinterpret_cast<std::uintptr_t>(view->data()) % alignment == 0);
    }
    auto compressed = z->DataOffset("tensor_data/.z");
    CHECK(compressed.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(compressed.status().message(), Catch::Contains("tensor_data/.z"));
    auto unzip = Run("unzip -tq " + Quote(path));
    CHECK(unzip.exit_code == 0);
  }
}

TEST_CASE("carton zip: python, unzip and bsdtar read the archives", "[zip][tools]") {
  TempDir dir;
  const auto data = Pattern(200000, 9);
  testing::WriteBytes(dir.file("expected.bin"), data);
  for (Compression method : kAllMethods) {
    INFO(CompressionName(method));
    std::string path = dir.file(std::string(CompressionName(method)) + ".zip");
    WriteArchive(
        path,
        {{"carton.toml", Bytes("spec_version = 1\n")}, {"model/w.bin", data}, {"model/empty", {}}},
        method);
    if (method == Compression::kZstd) {
      auto list = Run("bsdtar -tf " + Quote(path));
      CHECK(list.exit_code == 0);
      CHECK(list.out == "carton.toml\nmodel/w.bin\nmodel/empty\n");
      continue;
    }
    auto py = Run("python3 -m zipfile -t " + Quote(path));
    CHECK(py.exit_code == 0);
    CHECK(py.out.find("Done testing") != std::string::npos);
    auto unzip = Run("unzip -t " + Quote(path));
    CHECK(unzip.exit_code == 0);
    CHECK(unzip.out.find("No errors detected") != std::string::npos);
    auto extract = Run("unzip -p " + Quote(path) + " model/w.bin > " + Quote(dir.file("out.bin")));
    CHECK(extract.exit_code == 0);
    CHECK(ReadAll(dir.file("out.bin")) == data);
    auto list = Run("bsdtar -tf " + Quote(path));
    CHECK(list.exit_code == 0);
  }
}

TEST_CASE("carton zip: reads archives written by python's zipfile", "[zip][tools]") {
  TempDir dir;
  std::string path = dir.file("py.zip");
  PythonZip(dir, path,
            "z.writestr('a.txt', b'abc' * 1000, compress_type=zipfile.ZIP_DEFLATED)\n"
            "z.writestr('b.bin', b'xyz', compress_type=zipfile.ZIP_STORED)\n"
            "i = zipfile.ZipInfo('link')\n"
            "i.create_system = 3\n"
            "i.external_attr = 0o120777 << 16\n"
            "z.writestr(i, b'a.txt')\n");
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  REQUIRE(z->entries().size() == 3);
  auto a = z->Read("a.txt");
  REQUIRE(a.ok());
  CHECK(a->size() == 3000);
  CHECK(z->entries()[2].is_symlink);
  CHECK_FALSE(z->entries()[0].is_symlink);
}

TEST_CASE("carton zip: a flipped byte in entry data is reported with the entry name",
          "[zip][corrupt]") {
  TempDir dir;
  for (Compression method : kAllMethods) {
    INFO(CompressionName(method));
    std::string path = dir.file("flip.zip");
    ZipAddResult added;
    {
      auto w = ZipWriter::Create(path);
      REQUIRE(w.ok());
      REQUIRE(w->AddBytes("first", Pattern(1000, 1), method).ok());
      auto r = w->AddBytes("model/weights", Pattern(50000, 5), method);
      REQUIRE(r.ok());
      added = *r;
      REQUIRE(w->Finish().ok());
    }
    auto bytes = ReadAll(path);
    bytes[added.data_offset + added.compressed_size / 2] ^= std::byte{0x5a};
    auto z = ZipReader::OpenBuffer(bytes);
    REQUIRE(z.ok());  // data is only checked when read
    CHECK(z->Read("first").ok());
    auto r = z->Read("model/weights");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(r.status().message(), Catch::Contains("entry \"model/weights\""));
    Status streamed = z->ReadTo("model/weights", [](ByteView) { return Status::Ok(); });
    CHECK(streamed.code() == StatusCode::kCorrupt);
  }
}

TEST_CASE("carton zip: a wrong crc-32 is named in the error", "[zip][corrupt]") {
  TempDir dir;
  std::string path = dir.file("crc.zip");
  WriteArchive(path, {{"x", Bytes("payload")}}, Compression::kDeflate);
  auto bytes = ReadAll(path);
  // Flip the CRC in both headers so they still agree with each other.
  auto z0 = ZipReader::OpenBuffer(bytes);
  REQUIRE(z0.ok());
  std::uint32_t crc = z0->entries()[0].crc32;
  std::byte good[4], bad[4];
  StoreLE32(good, crc);
  StoreLE32(bad, crc ^ 1);
  REQUIRE(ReplaceAll(&bytes, AsChars(ByteView(good, 4)), AsChars(ByteView(bad, 4))) == 2);
  auto z = ZipReader::OpenBuffer(bytes);
  REQUIRE(z.ok());
  auto r = z->Read("x");
  CHECK(r.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(r.status().message(), Catch::Contains("entry \"x\": crc-32 mismatch"));
}

TEST_CASE("carton zip: truncated archives are rejected", "[zip][corrupt]") {
  TempDir dir;
  std::string path = dir.file("t.zip");
  WriteArchive(path, {{"a", Pattern(5000)}, {"b", Pattern(7000)}}, Compression::kZstd);
  auto bytes = ReadAll(path);
  for (std::size_t keep : {std::size_t{0}, std::size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
    INFO(keep);
    std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
    auto z = ZipReader::OpenBuffer(cut);
    REQUIRE_FALSE(z.ok());
    CHECK(z.status().code() == StatusCode::kCorrupt);
  }
  testing::WriteBytes(dir.file("cut.zip"), ByteView(bytes).first(bytes.size() - 30));
  auto z = ZipReader::Open(dir.file("cut.zip"));
  REQUIRE_FALSE(z.ok());
  CHECK_THAT(z.status().message(), Catch::Contains("cut.zip"));
}

TEST_CASE("carton zip: hostile names are rejected on open", "[zip][corrupt]") {
  TempDir dir;
  struct Case {
    std::string python_name;  // as a python literal
    std::string quoted;       // as the error message shows it
  };
  for (const Case& c :
       {Case{"'../x'", "\"../x\""}, Case{"'/etc/x'", "\"/etc/x\""}, Case{"'a\\\\x'", "\"a\\\\x\""},
        Case{"''", "\"\""}, Case{"'a/../../x'", "\"a/../../x\""}, Case{"'a//b'", "\"a//b\""},
        Case{"'./a'", "\"./a\""}, Case{"'C:/x'", "\"C:/x\""}}) {
    INFO(c.python_name);
    std::string path = dir.file("hostile.zip");
    PythonZip(dir, path,
              "z.writestr('fine', b'1')\n"
              "z.writestr(zipfile.ZipInfo(" +
                  c.python_name + "), b'2')\n");
    auto z = ZipReader::Open(path);
    REQUIRE_FALSE(z.ok());
    CHECK(z.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(z.status().message(), Catch::Contains("entry " + c.quoted + ": name"));
  }
}

TEST_CASE("carton zip: a NUL byte in a name is rejected", "[zip][corrupt]") {
  TempDir dir;
  std::string path = dir.file("nul.zip");
  WriteArchive(path, {{"model/aXb", Bytes("1")}}, Compression::kStored);
  auto bytes = ReadAll(path);
  REQUIRE(ReplaceAll(&bytes, "model/aXb", std::string_view("model/a\0b", 9)) == 2);
  auto z = ZipReader::OpenBuffer(bytes);
  REQUIRE_FALSE(z.ok());
  CHECK(z.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(z.status().message(), Catch::Contains("\"model/a\\x00b\": name contains a NUL byte"));
}

TEST_CASE("carton zip: duplicate names are rejected", "[zip][corrupt]") {
  TempDir dir;
  std::string path = dir.file("dup.zip");
  PythonZip(dir, path, "z.writestr('model/a', b'1')\nz.writestr('model/a', b'2')\n");
  auto z = ZipReader::Open(path);
  REQUIRE_FALSE(z.ok());
  CHECK(z.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(z.status().message(), Catch::Contains("entry \"model/a\": duplicate name"));

  auto w = ZipWriter::Create(dir.file("w.zip"));
  REQUIRE(w.ok());
  REQUIRE(w->AddBytes("a", Bytes("1"), Compression::kStored).ok());
  auto again = w->AddBytes("a", Bytes("2"), Compression::kZstd);
  CHECK(again.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(again.status().message(), Catch::Contains("entry \"a\": duplicate name"));
  // A rejected name leaves the writer usable.
  REQUIRE(w->AddBytes("b", Bytes("2"), Compression::kZstd).ok());
  REQUIRE(w->Finish().ok());
  auto r = ZipReader::Open(dir.file("w.zip"));
  REQUIRE(r.ok());
  CHECK(r->entries().size() == 2);
}

TEST_CASE("carton zip: the writer rejects bad names, levels and options", "[zip]") {
  TempDir dir;
  auto w = ZipWriter::Create(dir.file("w.zip"));
  REQUIRE(w.ok());
  const std::vector<std::string> bad_names = {
      "", "/abs", "../up", "a\\b", "a/./b", std::string("a\0b", 3), "bad\xff"};
  for (const std::string& name : bad_names) {
    auto r = w->AddBytes(name, Bytes("x"), Compression::kStored);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(w->AddBytes("a", Bytes("x"), Compression::kDeflate, 10).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(w->AddBytes("a", Bytes("x"), Compression::kZstd, 22).status().code() ==
        StatusCode::kInvalidArgument);
  auto missing = w->AddFile("a", dir.file("no-such-file"), Compression::kStored);
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(w->AddBytes("a", Bytes("x"), Compression::kZstd, 19).ok());
  CHECK(w->Finish().ok());
  CHECK(w->Finish().code() == StatusCode::kInvalidArgument);

  ZipWriterOptions bad;
  bad.alignment = 48;
  CHECK(ZipWriter::Create(dir.file("x.zip"), bad).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("carton zip: nothing is left behind without Finish", "[zip]") {
  TempDir dir;
  {
    auto w = ZipWriter::Create(dir.file("gone.zip"));
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("a", Pattern(10000), Compression::kZstd).ok());
  }
  CHECK(std::filesystem::is_empty(dir.path()));
  {
    auto w = ZipWriter::Create(dir.file("kept.zip"));
    REQUIRE(w.ok());
    REQUIRE(w->Finish().ok());
  }
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"kept.zip"});
  auto z = ZipReader::Open(dir.file("kept.zip"));
  REQUIRE(z.ok());
  CHECK(z->entries().empty());
}

TEST_CASE("carton zip: Finish reserves the archive's length before it writes a byte", "[zip]") {
  TempDir dir;
  // The reservation ends where the last entry's data ends and the central
  // directory follows it: the file is exactly the archive, nothing after
  // its end record.
  const std::string path = dir.file("a.zip");
  const auto big = Pattern(std::size_t{1} << 20);
  WriteArchive(path, {{"big", big}, {"small", Pattern(100, 2)}}, Compression::kStored);
  const auto bytes = ReadAll(path);
  REQUIRE(bytes.size() > big.size() + 22);
  CHECK(std::memcmp(bytes.data() + bytes.size() - 22, "PK\x05\x06", 4) == 0);
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  auto read = z->Read("big");
  REQUIRE(read.ok());
  CHECK(*read == big);

  // A disk without room for the archive (here: a file size limit below
  // it) fails Finish before the archive is written, naming the output,
  // and leaves no file behind.
  const std::string full = dir.file("full.zip");
  {
    auto w = ZipWriter::Create(full);
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("big", big, Compression::kStored).ok());
    Status s;
    {
      FileSizeLimit limit(64 << 10);
      s = w->Finish();
    }
    REQUIRE_FALSE(s.ok());
    INFO(s.ToString());
    CHECK(s.code() == StatusCode::kIoError);
    CHECK_THAT(s.message(),
               Catch::Contains(full + ": cannot reserve ") && Catch::Contains("File too large"));
  }
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"a.zip"});
}

TEST_CASE("carton zip: unknown methods and encrypted entries fail when read", "[zip]") {
  TempDir dir;
  std::string path = dir.file("m.zip");
  WriteArchive(path, {{"ok", Bytes("fine")}, {"odd", Bytes("data")}}, Compression::kStored,
               {.alignment = 1});
  auto bytes = ReadAll(path);
  auto z0 = ZipReader::OpenBuffer(bytes);
  REQUIRE(z0.ok());
  // Method 12 (bzip2) in both headers of "odd"; flag bit 0 in both of "ok".
  auto headers_of = [&](std::string_view name) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i + 4 <= bytes.size(); ++i) {
      std::uint32_t sig = LoadLE32(bytes.data() + i);
      std::size_t name_at = sig == 0x04034b50 ? 30 : sig == 0x02014b50 ? 46 : 0;
      if (name_at && i + name_at + name.size() <= bytes.size() &&
          AsChars(ByteView(bytes).subspan(i + name_at, name.size())) == name) {
        at.push_back(i + (sig == 0x04034b50 ? 0 : 2));
      }
    }
    return at;
  };
  for (std::size_t h : headers_of("odd")) StoreLE16(bytes.data() + h + 8, 12);
  for (std::size_t h : headers_of("ok")) bytes[h + 6] |= std::byte{1};
  auto z = ZipReader::OpenBuffer(bytes);
  REQUIRE(z.ok());
  CHECK(z->Find("odd")->method == 12);
  CHECK(z->Find("ok")->encrypted);
  auto odd = z->Read("odd");
  CHECK(odd.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(odd.status().message(), Catch::Contains("entry \"odd\": compression method 12"));
  auto ok = z->Read("ok");
  CHECK(ok.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(ok.status().message(), Catch::Contains("entry \"ok\": is encrypted"));
}

TEST_CASE("carton zip: zeros at every level stay within their method's ratio limit", "[zip]") {
  // The caps sit just above what each method can encode at all, so honest
  // data never meets them: 32 MiB of zeros (past kZipRatioMinSize) at the
  // fastest and the strongest levels.
  TempDir dir;
  const std::vector<std::byte> zeros(32 << 20);
  struct Case {
    Compression method;
    int level;
    std::uint64_t limit;
  };
  for (const Case& c : {Case{Compression::kDeflate, 1, kZipMaxDeflateRatio},
                        Case{Compression::kDeflate, 9, kZipMaxDeflateRatio},
                        Case{Compression::kZstd, 1, kZipMaxZstdRatio},
                        Case{Compression::kZstd, kZipMaxZstdLevel, kZipMaxZstdRatio}}) {
    INFO(CompressionName(c.method) << " level " << c.level);
    const std::string path = dir.file("z.zip");
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    auto added = w->AddBytes("zeros", zeros, c.method, c.level);
    REQUIRE(added.ok());
    REQUIRE(w->Finish().ok());
    INFO("compressed to " << added->compressed_size << " bytes");
    CHECK(added->size <= added->compressed_size * c.limit);
    auto z = ZipReader::Open(path);
    REQUIRE(z.ok());
    CHECK(z->Find("zeros")->size == zeros.size());
  }
}

TEST_CASE("carton zip: entries sharing bytes are rejected", "[zip][corrupt]") {
  TempDir dir;
  ZipWriterOptions unaligned;
  unaligned.alignment = 1;
  // The local header and data of "b", on their own.
  WriteArchive(dir.file("b.zip"), {{"b", Bytes("hello")}}, Compression::kStored, unaligned);
  auto b_zip = ReadAll(dir.file("b.zip"));
  std::vector<std::byte> b_local(b_zip.begin(), b_zip.begin() + 30 + 1 + 5);
  // "a" holds a copy of them; "b"'s central entry is pointed at that copy.
  std::string path = dir.file("overlap.zip");
  WriteArchive(path, {{"a", b_local}, {"b", Bytes("hello")}}, Compression::kStored, unaligned);
  auto bytes = ReadAll(path);
  std::size_t cd = bytes.size();
  for (std::size_t i = 0; i + 4 <= bytes.size(); ++i) {
    if (LoadLE32(bytes.data() + i) == 0x02014b50 && bytes[i + 46] == std::byte{'b'}) cd = i;
  }
  REQUIRE(cd < bytes.size());
  StoreLE32(bytes.data() + cd + 42, 30 + 1);  // a's data offset
  auto z = ZipReader::OpenBuffer(bytes);
  REQUIRE_FALSE(z.ok());
  CHECK(z.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(z.status().message(), Catch::Contains("entry \"b\" overlaps entry \"a\""));
}

TEST_CASE("carton zip: Read refuses entries over the size limit, and ReadTo streams them",
          "[zip]") {
  TempDir dir;
  std::string path = dir.file("big.zip");
  WriteArchive(path, {{"zeros", std::vector<std::byte>(1 << 20)}}, Compression::kZstd);
  auto z = ZipReader::Open(path, {.max_read_size = 1000});
  REQUIRE(z.ok());
  auto r = z->Read("zeros");
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(r.status().message(), Catch::Contains("entry \"zeros\""));
  std::uint64_t n = 0;
  CHECK(z->ReadTo("zeros", [&](ByteView b) {
           n += b.size();
           return Status::Ok();
         }).ok());
  CHECK(n == 1 << 20);
  Status stop = z->ReadTo("zeros", [](ByteView) { return Status(StatusCode::kIoError, "full"); });
  CHECK(stop.code() == StatusCode::kIoError);
  CHECK(stop.message() == "full");
}

TEST_CASE("carton zip: more than 65535 entries use zip64 end records", "[zip][zip64]") {
  TempDir dir;
  std::string path = dir.file("many.zip");
  constexpr int kEntries = 70000;
  {
    auto w = ZipWriter::Create(path, {.alignment = 1});
    REQUIRE(w.ok());
    for (int i = 0; i < kEntries; ++i) {
      REQUIRE(
          w->AddBytes("e/" + std::to_string(i), AsBytes(std::to_string(i)), Compression::kStored)
              .ok());
    }
    REQUIRE(w->Finish().ok());
  }
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  REQUIRE(z->entries().size() == kEntries);
  auto last = z->Read("e/69999");
  REQUIRE(last.ok());
  CHECK(*last == Bytes("69999"));
  auto py =
      Run("python3 -c \"import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
          "print(len(z.infolist()), z.read('e/69999').decode())\" " +
          Quote(path));
  CHECK(py.exit_code == 0);
  CHECK(py.out == "70000 69999\n");
}

// Writes about 4.3 GiB; run on demand with "[zip64-large]".
TEST_CASE("carton zip: entries and offsets past 4 GiB use zip64", "[.][zip64-large]") {
  TempDir dir;
  const std::uint64_t kSize = (std::uint64_t{4} << 30) + 12345;
  std::string source = dir.file("big.bin");
  {
    auto w = Run("truncate -s " + std::to_string(kSize) + " " + Quote(source));
    REQUIRE(w.exit_code == 0);
  }
  std::string path = dir.file("big.zip");
  {
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    REQUIRE(w->AddFile("big", source, Compression::kStored).ok());
    REQUIRE(w->AddFile("big.zst", source, Compression::kZstd).ok());
    REQUIRE(w->AddBytes("after", Bytes("tail"), Compression::kDeflate).ok());
    REQUIRE(w->Finish().ok());
  }
  std::filesystem::remove(source);
  // 4 GiB of zeros: stored, then zstd at about 32000 : 1, within zstd's
  // ratio limit.
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  CHECK(z->Find("big")->size == kSize);
  CHECK(z->Find("big.zst")->size == kSize);
  auto tail = z->Read("after");
  REQUIRE(tail.ok());
  CHECK(*tail == Bytes("tail"));
  std::uint64_t n = 0;
  CHECK(z->ReadTo("big.zst", [&](ByteView b) {
           n += b.size();
           return Status::Ok();
         }).ok());
  CHECK(n == kSize);
  auto py =
      Run("python3 -c \"import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
          "print([i.file_size for i in z.infolist()], "
          "z.read('after').decode())\" " +
          Quote(path));
  CHECK(py.out == "[" + std::to_string(kSize) + ", " + std::to_string(kSize) + ", 4] tail\n");
  auto unzip = Run("unzip -l " + Quote(path));
  CHECK(unzip.exit_code == 0);
  auto bsdtar = Run("bsdtar -tf " + Quote(path));
  CHECK(bsdtar.out == "big\nbig.zst\nafter\n");
}

TEST_CASE("carton zip: damaged archives give errors, never crashes", "[zip][corrupt]") {
  TempDir dir;
  std::string path = dir.file("d.zip");
  {
    auto w = ZipWriter::Create(path, {.alignment = 1});
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("a", Pattern(3000, 1), Compression::kDeflate).ok());
    REQUIRE(w->AddBytes("b/c", Pattern(3000, 2), Compression::kZstd).ok());
    REQUIRE(w->AddBytes("d", Pattern(300, 3), Compression::kStored).ok());
    REQUIRE(w->AddDirectory("e").ok());
    REQUIRE(w->Finish().ok());
  }
  const auto original = ReadAll(path);
  std::uint64_t x = 12345;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int opened = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = original;
    int flips = 1 + static_cast<int>(next() % 3);
    for (int k = 0; k < flips; ++k) {
      // Half the damage goes to the headers at the end, where it matters most.
      std::size_t at = next() % 2
                           ? next() % bytes.size()
                           : bytes.size() - 1 - next() % std::min<std::size_t>(bytes.size(), 250);
      bytes[at] = static_cast<std::byte>(next());
    }
    if (next() % 8 == 0) bytes.resize(next() % bytes.size());
    auto z = ZipReader::OpenBuffer(bytes);
    if (!z.ok()) {
      CHECK(z.status().code() != StatusCode::kInternal);
      continue;
    }
    ++opened;
    for (const auto& e : z->entries()) {
      auto r = z->Read(e.name);
      if (!r.ok()) CHECK(r.status().code() != StatusCode::kInternal);
    }
  }
  CHECK(opened > 0);
}

TEST_CASE("carton zip: zstd entries round trip at decoder buffer boundaries", "[zip]") {
  TempDir dir;
  std::string path = dir.file("sizes.zip");
  const std::vector<std::size_t> sizes = {0,    1,     4095,    4096,         4097,
                                          5000, 65536, 1 << 20, (1 << 20) + 1};
  {
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    for (std::size_t n : sizes) {
      // Runs compress to a few bytes, so one read hands over the whole
      // frame and the output buffer fills exactly.
      REQUIRE(w->AddBytes("runs/" + std::to_string(n), std::vector<std::byte>(n, std::byte{'w'}),
                          Compression::kZstd)
                  .ok());
      REQUIRE(w->AddBytes("pattern/" + std::to_string(n), Pattern(n, n), Compression::kZstd).ok());
    }
    REQUIRE(w->Finish().ok());
  }
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  for (std::size_t n : sizes) {
    INFO(n);
    auto runs = z->Read("runs/" + std::to_string(n));
    REQUIRE(runs.ok());
    CHECK(*runs == std::vector<std::byte>(n, std::byte{'w'}));
    auto pattern = z->Read("pattern/" + std::to_string(n));
    REQUIRE(pattern.ok());
    CHECK(*pattern == Pattern(n, n));
  }
}

TEST_CASE("carton zip: a stored source file that changes before Finish fails", "[zip]") {
  TempDir dir;
  const std::string source = dir.file("src.bin");
  for (std::string change : {"grow", "shrink", "rewrite", "rewrite"}) {
    INFO(change);
    testing::WriteBytes(source, Pattern(10000, 4));
    std::string path = dir.file("changed.zip");
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    // AddFile reads the file now, AddFileUnread only when writing: both
    // check it is still the version added.
    const bool unread = change == "rewrite";
    auto added = unread ? w->AddFileUnread("model/w", source)
                        : w->AddFile("model/w", source, Compression::kStored);
    REQUIRE(added.ok());
    auto data = Pattern(10000, 4);
    if (change == "grow") data.push_back(std::byte{'x'});
    if (change == "shrink") data.pop_back();
    if (change == "rewrite") data[5000] ^= std::byte{1};
    testing::WriteBytes(source, data);
    Status s = w->Finish();
    CHECK(s.code() == StatusCode::kIoError);
    CHECK_THAT(s.message(), Catch::Contains("entry \"model/w\""));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"src.bin"});
}

TEST_CASE("carton zip: large in-memory entries spill to a hidden spool file", "[zip]") {
  TempDir dir;
  std::string path = dir.file("spill.zip");
  // Stored bytes from memory are copied to the spool; past 8 MiB it is a
  // file, unlinked as soon as it is created.
  const std::vector<std::byte> big(40 << 20, std::byte{7});
  const auto tail = Pattern(300000, 8);
  {
    auto w = ZipWriter::Create(path, {.alignment = 4096});
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("big", big, Compression::kStored).ok());
    REQUIRE(w->AddBytes("tail.zst", tail, Compression::kZstd).ok());
    auto r = w->AddBytes("tail", tail, Compression::kStored);
    REQUIRE(r.ok());
    CHECK(r->data_offset % 4096 == 0);
    std::size_t visible = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      (void)e;
      ++visible;
    }
    CHECK(visible == 1);  // the archive's temporary file only
    REQUIRE(w->Finish().ok());
  }
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  auto b = z->MappedData("big");
  REQUIRE(b.ok());
  CHECK(std::equal(b->begin(), b->end(), big.begin(), big.end()));
  auto t = z->Read("tail.zst");
  REQUIRE(t.ok());
  CHECK(*t == tail);
}

TEST_CASE("carton zip: entries can be read from several threads at once", "[zip]") {
  TempDir dir;
  std::string path = dir.file("threads.zip");
  std::vector<std::pair<std::string, std::vector<std::byte>>> entries;
  {
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    for (int i = 0; i < 8; ++i) {
      for (Compression method : kAllMethods) {
        std::string name = std::string(CompressionName(method)) + "/" + std::to_string(i);
        entries.emplace_back(name, Pattern(200000 + 1000 * i, i));
        REQUIRE(w->AddBytes(name, entries.back().second, method).ok());
      }
    }
    REQUIRE(w->Finish().ok());
  }
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  std::vector<int> ok(entries.size(), 0);
  {
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t i = t; i < entries.size(); i += 4) {
          auto r = z->Read(entries[i].first);
          ok[i] = r.ok() && *r == entries[i].second;
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  CHECK(std::count(ok.begin(), ok.end(), 1) == static_cast<std::ptrdiff_t>(entries.size()));
}

TEST_CASE("carton zip: AddFileUnread and AddLater write their bytes with Finish", "[zip]") {
  TempDir dir;
  const std::string source = dir.file("src.bin");
  const auto bytes = Pattern(300000, 11);
  testing::WriteBytes(source, bytes);
  const std::string path = dir.file("later.zip");
  bool produced = false;
  {
    auto w = ZipWriter::Create(path, {.alignment = 4096});
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("a.txt", AsBytes("first"), Compression::kDeflate).ok());
    auto f = w->AddFileUnread("model/w", source);
    REQUIRE(f.ok());
    CHECK(f->size == bytes.size());
    CHECK(f->compressed_size == bytes.size());
    CHECK(f->data_offset % 4096 == 0);
    CHECK_FALSE(f->sha256.has_value());
    CHECK(f->source_identity.size == bytes.size());
    auto l = w->AddLater("LATER", 5, [&]() -> Result<std::string> {
      produced = true;
      return std::string("later");
    });
    REQUIRE(l.ok());
    CHECK(l->data_offset % 4096 == 0);
    CHECK_FALSE(produced);  // only when Finish() reaches it
    REQUIRE(w->Finish().ok());
  }
  CHECK(produced);
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  REQUIRE(z->entries().size() == 3);
  CHECK(z->entries()[2].name == "LATER");
  auto w = z->Read("model/w");  // checks the CRC-32 libzip wrote
  REQUIRE(w.ok());
  CHECK(*w == bytes);
  auto l = z->Read("LATER");
  REQUIRE(l.ok());
  CHECK(*l == Bytes("later"));
  auto mapped = z->MappedData("model/w");
  REQUIRE(mapped.ok());
  CHECK(mapped->data() == z->archive().data() + *z->DataOffset("model/w"));
  auto r = Run("unzip -tq " + Quote(path));
  CHECK(r.exit_code == 0);
}

TEST_CASE("carton zip: an AddLater producer's error or wrong size fails Finish", "[zip]") {
  TempDir dir;
  const std::string path = dir.file("later.zip");
  struct Case {
    ZipWriter::Producer produce;
    StatusCode code;
    std::string message;
  };
  std::vector<Case> cases = {
      {[]() -> Result<std::string> { return IoError("hashes failed"); }, StatusCode::kIoError,
       "hashes failed"},
      {[]() -> Result<std::string> { return std::string("too long"); }, StatusCode::kInternal,
       "entry \"LATER\": produced 8 bytes, not 5"},
  };
  for (const auto& c : cases) {
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("a.txt", AsBytes("first"), Compression::kStored).ok());
    REQUIRE(w->AddLater("LATER", 5, c.produce).ok());
    Status s = w->Finish();
    CHECK(s.code() == c.code);
    CHECK_THAT(s.message(), Catch::Contains(c.message));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("carton zip: an AddStream entry is read piece by piece when Finish reaches it", "[zip]") {
  TempDir dir;
  const std::string path = dir.file("stream.zip");
  const auto bytes = Pattern(3'000'000, 5);
  // Pieces of uneven sizes, as a download gives them, each in a buffer
  // that is overwritten when the next piece is asked for.
  const std::vector<std::size_t> sizes = {1, 700'000, 8'191, 262'144, 1'000'000};
  std::vector<std::byte> buffer;
  std::vector<std::uint64_t> offsets;
  {
    auto w = ZipWriter::Create(path, {.alignment = 4096});
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("carton.toml", AsBytes("x = 1\n"), Compression::kStored).ok());
    auto a =
        w->AddStream("model/w.bin", bytes.size(), [&](std::uint64_t offset) -> Result<ByteView> {
          const std::size_t n =
              std::min<std::size_t>(sizes[offsets.size() % sizes.size()], bytes.size() - offset);
          offsets.push_back(offset);
          buffer.assign(bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                        bytes.begin() + static_cast<std::ptrdiff_t>(offset + n));
          return ByteView(buffer.data(), buffer.size());
        });
    REQUIRE(a.ok());
    CHECK(a->data_offset % 4096 == 0);
    CHECK(a->size == bytes.size());
    CHECK(offsets.empty());  // only when Finish() reaches it
    REQUIRE(w->AddBytes("after", AsBytes("y"), Compression::kStored).ok());
    REQUIRE(w->Finish().ok());
  }
  REQUIRE(offsets.size() >= 5);
  std::uint64_t expected = 0;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    CHECK(offsets[i] == expected);  // in order, no byte asked twice
    expected += std::min<std::size_t>(sizes[i % sizes.size()], bytes.size() - expected);
  }
  CHECK(expected == bytes.size());
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  auto w = z->Read("model/w.bin");  // checks the CRC-32 libzip computed
  REQUIRE(w.ok());
  CHECK(*w == bytes);
  CHECK(Run("unzip -tq " + Quote(path)).exit_code == 0);
}

TEST_CASE("carton zip: large entries of every kind, written past the output's buffer", "[zip]") {
  // Entries of 256 KiB or more are written to the file by their source
  // while libzip's copy of the same bytes is dropped; smaller ones go
  // through the output's buffer. Both kinds side by side, from every source.
  TempDir dir;
  const std::string file_a = dir.file("a.bin");
  const std::string file_b = dir.file("b.bin");
  const auto a = Pattern((1 << 20) + 3, 21);
  const auto b = Pattern(2 << 20, 22);
  testing::WriteBytes(file_a, a);
  testing::WriteBytes(file_b, b);
  const auto at_min = Pattern(256 << 10, 23);
  const auto below_min = Pattern((256 << 10) - 1, 24);
  const auto compressible = Pattern(600'000, 25);
  const auto later = Pattern(300'000, 26);
  const auto streamed = Pattern(500'000, 27);
  std::vector<std::pair<std::string, std::vector<std::byte>>> expected = {
      {"small-1", Bytes("1")},     {"model/a.bin", a},
      {"at-min", at_min},          {"below-min", below_min},
      {"c.deflate", compressible}, {"small-2", Bytes("22")},
      {"model/b.bin", b},          {"later", later},
      {"streamed", streamed},      {"small-3", Bytes("333")},
  };
  auto write = [&](const std::string& path) {
    auto w = ZipWriter::Create(path, {.alignment = 4096});
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("small-1", AsBytes("1"), Compression::kStored).ok());
    REQUIRE(w->AddFile("model/a.bin", file_a, Compression::kStored).ok());
    REQUIRE(w->AddBytes("at-min", at_min, Compression::kStored).ok());
    REQUIRE(w->AddBytes("below-min", below_min, Compression::kStored).ok());
    REQUIRE(w->AddBytes("c.deflate", compressible, Compression::kDeflate, 1).ok());
    REQUIRE(w->AddDirectory("model/").ok());
    REQUIRE(w->AddBytes("small-2", AsBytes("22"), Compression::kDeflate).ok());
    REQUIRE(w->AddFileUnread("model/b.bin", file_b).ok());
    REQUIRE(w->AddLater("later", later.size(), [&]() -> Result<std::string> {
               return std::string(reinterpret_cast<const char*>(later.data()), later.size());
             }).ok());
    REQUIRE(
        w->AddStream("streamed", streamed.size(), [&](std::uint64_t offset) -> Result<ByteView> {
           return ByteView(streamed).subspan(
               offset, std::min<std::uint64_t>(100'000, streamed.size() - offset));
         }).ok());
    REQUIRE(w->AddBytes("small-3", AsBytes("333"), Compression::kStored).ok());
    REQUIRE(w->Finish().ok());
  };
  const std::string path = dir.file("mixed.zip");
  write(path);
  auto z = ZipReader::Open(path);
  REQUIRE(z.ok());
  for (const auto& [name, bytes] : expected) {
    INFO(name);
    auto got = z->Read(name);  // checks the CRC-32 in the directory
    REQUIRE(got.ok());
    CHECK(*got == bytes);
  }
  CHECK(Run("unzip -tq " + Quote(path)).exit_code == 0);
  CHECK(Run("python3 -m zipfile -t " + Quote(path)).exit_code == 0);
  // The same calls give the same bytes.
  const std::string again = dir.file("again.zip");
  write(again);
  CHECK(testing::ReadText(again) == testing::ReadText(path));
}

TEST_CASE("carton zip: an AddStream producer's error, or a count out of range, fails Finish",
          "[zip]") {
  TempDir dir;
  const std::string path = dir.file("stream.zip");
  struct Case {
    ZipWriter::StreamProducer produce;
    StatusCode code;
    std::string message;
  };
  static const std::vector<std::byte> kOnes(200, std::byte{1});
  std::vector<Case> cases = {
      {[](std::uint64_t offset) -> Result<ByteView> {
         if (offset > 0) return Corrupt("sha256 is wrong");
         return ByteView(kOnes).first(10);
       },
       StatusCode::kCorrupt, "sha256 is wrong"},
      {[](std::uint64_t) -> Result<ByteView> { return ByteView(); }, StatusCode::kInternal,
       "entry \"S\": the stream gave 0 bytes for the 100 left"},
      {[](std::uint64_t offset) -> Result<ByteView> {
         return ByteView(kOnes).first(offset == 0 ? 60 : 41);
       },
       StatusCode::kInternal, "entry \"S\": the stream gave 41 bytes for the 40 left"},
  };
  for (const auto& c : cases) {
    auto w = ZipWriter::Create(path);
    REQUIRE(w.ok());
    REQUIRE(w->AddStream("S", 100, c.produce).ok());
    Status s = w->Finish();
    CHECK(s.code() == c.code);
    CHECK_THAT(s.message(), Catch::Contains(c.message));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("carton zip: the CRC-32 of an entry's bytes, and the one message when it differs",
          "[zip][corrupt]") {
  // The check value of CRC-32 (ISO-HDLC) and a split feed give the same.
  CHECK(UpdateCrc32(0, AsBytes("123456789")) == 0xCBF43926u);
  CHECK(UpdateCrc32(UpdateCrc32(0, AsBytes("1234")), AsBytes("56789")) == 0xCBF43926u);
  CHECK(UpdateCrc32(0, ByteView()) == 0u);
  ZipEntry e;
  e.name = "model/w.bin";
  e.crc32 = 0xCBF43926u;
  CHECK(ZipReader::CheckCrc32(e, 0xCBF43926u).ok());
  const Status s = ZipReader::CheckCrc32(e, 0x12345678u);
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message() ==
        "entry \"model/w.bin\": crc-32 mismatch: the directory says 0xcbf43926, the data gives "
        "0x12345678");
}

TEST_CASE("carton zip: OpenFile reads through a mapping the caller shares", "[zip]") {
  TempDir dir;
  std::string path = dir.file("shared.zip");
  WriteArchive(path, {{"a", Bytes("alpha")}, {"b", Pattern(100000)}}, Compression::kStored);
  auto opened = MappedFile::Open(path);
  REQUIRE(opened.ok());
  auto file = std::make_shared<const MappedFile>(std::move(opened).value());
  {
    auto zip = ZipReader::OpenFile(file);
    REQUIRE(zip.ok());
    auto a = zip->MappedData("a");
    REQUIRE(a.ok());
    CHECK(AsChars(*a) == "alpha");
    // The view is the caller's mapping.
    CHECK(a->data() >= file->bytes().data());
    CHECK(a->data() + a->size() <= file->bytes().data() + file->size());
    CHECK(*zip->Read("b") == Pattern(100000));
  }
  // The mapping outlives the reader.
  CHECK(file->size() > 100000);
  CHECK(file->fd() >= 0);
}

TEST_CASE("carton zip: zstd pays for text but not for random bytes", "[zip]") {
  TempDir dir;
  std::string text;
  while (text.size() < (1 << 20)) text += "the weights of the model, layer by layer\n";
  testing::WriteBytes(dir.file("text"), AsBytes(text));
  std::vector<std::byte> noise(1 << 20);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : noise) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x >> 56);
  }
  testing::WriteBytes(dir.file("noise"), noise);
  CHECK(ZstdPays(dir.file("text"), text.size()));
  CHECK_FALSE(ZstdPays(dir.file("noise"), noise.size()));
  CHECK_FALSE(ZstdPays(dir.file("missing"), 100));
}

TEST_CASE("carton zip: AddFiles writes the bytes AddFile would, in the same order", "[zip]") {
  TempDir dir;
  // Sizes around the points that matter: empty, tiny, zstd's own
  // multithreading threshold, and the batch limit itself.
  const std::vector<std::size_t> sizes = {
      0, 1, 4000, 70000, 600000, 100, 300000, 1 << 20, kZipBatchFileMax, 12345};
  std::vector<ZipFileToAdd> files;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string source = dir.file("src" + std::to_string(i));
    testing::WriteBytes(source, Pattern(sizes[i], i + 1));
    const Compression method = i % 3 == 2 ? Compression::kDeflate : Compression::kZstd;
    files.push_back({"dir/f" + std::to_string(i), source, method, i == 4 ? 7 : 0});
  }
  ZipAddOptions add;
  add.sha256 = true;
  for (const int workers : {0, 2}) {
    const std::string one_by_one = dir.file("one-" + std::to_string(workers) + ".zip");
    std::vector<ZipAddResult> expected;
    {
      auto w = ZipWriter::Create(one_by_one, {.zstd_workers = workers});
      REQUIRE(w.ok());
      REQUIRE(w->AddBytes("first", AsBytes("before the batch"), Compression::kStored).ok());
      for (const auto& f : files) {
        auto r = w->AddFile(f.name, f.source_path, f.method, f.level, add);
        REQUIRE(r.ok());
        expected.push_back(*r);
      }
      REQUIRE(w->AddBytes("last", AsBytes("after it"), Compression::kZstd).ok());
      REQUIRE(w->Finish().ok());
    }
    for (const unsigned threads : {1u, 2u, 3u}) {
      INFO("zstd workers " << workers << ", threads " << threads);
      const std::string batched = dir.file("batch.zip");
      std::uint64_t read = 0;
      ZipWriterOptions options{.zstd_workers = workers};
      options.on_read = [&](std::uint64_t n) { read += n; };
      auto w = ZipWriter::Create(batched, options);
      REQUIRE(w.ok());
      REQUIRE(w->AddBytes("first", AsBytes("before the batch"), Compression::kStored).ok());
      auto r = w->AddFiles(files, add, threads);
      REQUIRE(r.ok());
      REQUIRE(r->size() == files.size());
      for (std::size_t i = 0; i < files.size(); ++i) {
        CHECK((*r)[i].size == expected[i].size);
        CHECK((*r)[i].compressed_size == expected[i].compressed_size);
        CHECK((*r)[i].crc32 == expected[i].crc32);
        CHECK((*r)[i].data_offset == expected[i].data_offset);
        CHECK((*r)[i].sha256 == expected[i].sha256);
        CHECK((*r)[i].source_identity == expected[i].source_identity);
      }
      REQUIRE(w->AddBytes("last", AsBytes("after it"), Compression::kZstd).ok());
      REQUIRE(w->Finish().ok());
      CHECK(ReadAll(batched) == ReadAll(one_by_one));
      std::uint64_t total = 16 + 8;  // the two AddBytes entries
      for (const auto s : sizes) total += s;
      CHECK(read == total);
    }
  }
}

TEST_CASE("carton zip: AddFiles refuses what it cannot batch before adding anything", "[zip]") {
  TempDir dir;
  const std::string a = dir.file("a");
  testing::WriteBytes(a, Pattern(1000));
  auto refused = [&](const std::vector<ZipFileToAdd>& files, const ZipAddOptions& add,
                     const std::string& message) {
    auto w = ZipWriter::Create(dir.file("r.zip"));
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("taken", AsBytes("x"), Compression::kStored).ok());
    auto r = w->AddFiles(files, add);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(message));
    // Nothing was added and the writer is still usable.
    CHECK(w->entry_count() == 1);
    REQUIRE(w->AddFile("ok", a, Compression::kZstd).ok());
    REQUIRE(w->Finish().ok());
  };
  refused({{"x", a, Compression::kStored, 0}}, {}, "entry \"x\": AddFiles compresses");
  refused({{"x", a, Compression::kZstd, 0}, {"x", a, Compression::kZstd, 0}}, {},
          "entry \"x\": duplicate name");
  refused({{"taken", a, Compression::kZstd, 0}}, {}, "entry \"taken\": duplicate name");
  refused({{"x", a, Compression::kDeflate, 10}}, {}, "deflate level 10 is outside 1..9");
  ZipAddOptions observed;
  observed.observer = [](ByteView) {};
  refused({{"x", a, Compression::kZstd, 0}}, observed, "AddFiles takes no observer");
  // Accepted: the same files without the fault.
  auto w = ZipWriter::Create(dir.file("ok.zip"));
  REQUIRE(w.ok());
  REQUIRE(w->AddFiles({{"x", a, Compression::kZstd, 0}}).ok());
  REQUIRE(w->Finish().ok());
}

TEST_CASE("carton zip: an AddFiles file that is missing or too large fails the writer", "[zip]") {
  TempDir dir;
  const std::string small = dir.file("small");
  testing::WriteBytes(small, Pattern(1000));
  const std::string large = dir.file("large");
  testing::WriteBytes(large, Pattern(kZipBatchFileMax + 1));
  const std::pair<std::string, std::string> cases[] = {
      {dir.file("missing"), "entry \"b\": cannot open " + dir.file("missing")},
      {large, "entry \"b\": " + large + " is larger than 4194304 bytes"},
  };
  for (const auto& [path, message] : cases) {
    const std::string out = dir.file("f.zip");
    auto w = ZipWriter::Create(out);
    REQUIRE(w.ok());
    auto r = w->AddFiles({{"a", small, Compression::kZstd, 0}, {"b", path, Compression::kZstd, 0}});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains(message));
    CHECK_FALSE(w->Finish().ok());
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

TEST_CASE(
    "carton zip: zstd with workers gives the same bytes every run, for inputs that fill "
    "their last job exactly",
    "[zip]") {
  // 12 jobs of 2 MiB and 2 jobs of it and one byte less: whether the last
  // full job went to a worker before the end used to depend on timing, and
  // when it did the frame ended with one more, empty block.
  TempDir dir;
  for (const std::size_t size : {std::size_t{24} << 20, (std::size_t{4} << 20) - 1}) {
    const std::string source = dir.file("noise");
    testing::WriteBytes(source, AsBytes(testing::Noise(size, 7)));
    std::vector<std::byte> first;
    for (int run = 0; run < 8; ++run) {
      const int workers = 1 + run % 3;
      INFO("size " << size << ", run " << run << ", zstd workers " << workers);
      const std::string path = dir.file("run.zip");
      auto w = ZipWriter::Create(path, {.zstd_workers = workers});
      REQUIRE(w.ok());
      auto r = w->AddFile("noise", source, Compression::kZstd, 0);
      REQUIRE(r.ok());
      REQUIRE(w->Finish().ok());
      const std::vector<std::byte> archive = ReadAll(path);
      REQUIRE(r->data_offset + r->compressed_size <= archive.size());
      // The frame's last block header: last-block bit set, raw, 0 bytes.
      const std::byte* end = archive.data() + r->data_offset + r->compressed_size;
      const bool empty_last_block =
          end[-3] == std::byte{1} && end[-2] == std::byte{0} && end[-1] == std::byte{0};
      CHECK_FALSE(empty_last_block);
      if (run == 0) first = archive;
      const bool same_bytes = archive == first;
      CHECK(same_bytes);
    }
  }
}
