// ZipWriterOptions::file_threads: stored files copied into the archive by
// several threads, and large zstd files compressed as independent frames
// written straight into place. The archive must not depend on the thread
// count, must read back (our reader, unzip), and a file that changes while
// it is copied must fail the archive with nothing left behind.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/zip/layout.h"
#include "carton/zip/reader.h"
#include "carton/zip/writer.h"
#include "testing.h"

using namespace carton;
using carton::testing::ListDir;
using carton::testing::Noise;
using carton::testing::Run;
using carton::testing::TempDir;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

std::vector<std::byte> ReadAll(const std::string& path) {
  auto r = ReadFile(path);
  REQUIRE(r.ok());
  return *r;
}

// Text-like bytes that zstd compresses about 3:1.
std::string Words(std::size_t n, std::uint64_t seed) {
  static const char* const kWords[] = {"tensor ",    "weight ", "bias ", "layer ", "norm ",
                                       "attention ", "0.125 ",  "-3.5 ", "\n"};
  std::string out;
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  while (out.size() < n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out += kWords[x % 9];
  }
  out.resize(n);
  return out;
}

struct SourceFile {
  std::string name;
  std::size_t size;
};

// Sizes around the copier's limits: under 256 KiB (libzip's own pass),
// exactly one 1 MiB piece, several pieces and a partial last one.
const SourceFile kStoredFiles[] = {{"model/small.bin", 10'000},
                                   {"model/edge.bin", 256 << 10},
                                   {"model/one.bin", 1 << 20},
                                   {"model/big.bin", (5 << 20) + 123},
                                   {"model/mid.bin", 3 << 20}};

std::string WriteStoredArchive(const TempDir& dir, unsigned threads) {
  const std::string path = dir.file("stored-" + std::to_string(threads) + ".zip");
  auto w = ZipWriter::Create(path, {.file_threads = threads});
  REQUIRE(w.ok());
  REQUIRE(w->AddBytes("carton.toml", AsBytes("x = 1\n"), Compression::kDeflate).ok());
  bool read_now = false;
  for (const auto& f : kStoredFiles) {
    const std::string source = dir.file("src/" + f.name);
    // Both ways of adding a stored file end in the same copy.
    auto r = read_now ? w->AddFile(f.name, source, Compression::kStored)
                      : w->AddFileUnread(f.name, source);
    REQUIRE(r.ok());
    read_now = !read_now;
  }
  REQUIRE(w->Finish().ok());
  return path;
}

}  // namespace

TEST_CASE("carton zip: stored files copied on file threads give the same archive", "[zip]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("src/model"));
  std::uint64_t seed = 1;
  for (const auto& f : kStoredFiles) {
    testing::WriteBytes(dir.file("src/" + f.name), AsBytes(Noise(f.size, seed++)));
  }
  const std::vector<std::byte> one_thread = ReadAll(WriteStoredArchive(dir, 0));
  for (unsigned threads : {1u, 2u, 7u}) {
    INFO("file threads " << threads);
    const std::string path = WriteStoredArchive(dir, threads);
    const bool same_bytes = ReadAll(path) == one_thread;
    CHECK(same_bytes);
    auto z = ZipReader::Open(path);
    REQUIRE(z.ok());
    seed = 1;
    for (const auto& f : kStoredFiles) {
      auto bytes = z->Read(f.name);  // checks the CRC-32 libzip wrote
      REQUIRE(bytes.ok());
      const std::string expected = Noise(f.size, seed++);
      CHECK(bytes->size() == expected.size());
      CHECK(std::memcmp(bytes->data(), expected.data(), expected.size()) == 0);
    }
    CHECK(Run("unzip -tq " + Q(path)).exit_code == 0);
  }
}

TEST_CASE("carton zip: a stored file that changes before its copy fails Finish, leaving nothing",
          "[zip]") {
  TempDir dir;
  const std::string source = dir.file("src.bin");
  for (std::string change : {"grow", "shrink", "rewrite", "remove"}) {
    INFO(change);
    std::string data = Noise(3 << 20, 4);
    testing::WriteBytes(source, AsBytes(data));
    const std::string path = dir.file("changed.zip");
    auto w = ZipWriter::Create(path, {.file_threads = 3});
    REQUIRE(w.ok());
    REQUIRE(w->AddFileUnread("model/w", source).ok());
    if (change == "grow") data.push_back('x');
    if (change == "shrink") data.pop_back();
    if (change == "rewrite") data[2'000'000] ^= 1;
    if (change == "remove") {
      std::filesystem::remove(source);
    } else {
      testing::WriteBytes(source, AsBytes(data));
    }
    Status s = w->Finish();
    CHECK(s.code() == StatusCode::kIoError);
    CHECK_THAT(s.message(), Catch::Contains("entry \"model/w\""));
    CHECK_THAT(s.message(), Catch::Contains(source));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  CHECK(ListDir(dir.path()) == std::vector<std::string>{});
}

TEST_CASE("carton zip: a large zstd file is compressed as frames, the same for any thread count",
          "[zip]") {
  TempDir dir;
  // Frames of 1 MiB: nine full ones and a short last one.
  const std::string text = Words((9 << 20) + 4321, 3);
  const std::string source = dir.file("words.txt");
  testing::WriteBytes(source, AsBytes(text));
  std::vector<std::byte> first;
  ZipAddResult first_result;
  for (unsigned threads : {1u, 2u, 5u, 16u}) {
    INFO("file threads " << threads);
    const std::string path = dir.file("frames.zip");
    std::uint64_t reported = 0;
    ZipWriterOptions options{.file_threads = threads};
    options.on_read = [&](std::uint64_t n) { reported += n; };
    auto w = ZipWriter::Create(path, options);
    REQUIRE(w.ok());
    REQUIRE(w->AddBytes("a.txt", AsBytes("before"), Compression::kStored).ok());
    reported = 0;
    auto r = w->AddFile("model/words.txt", source, Compression::kZstd);
    REQUIRE(r.ok());
    CHECK(reported == text.size());  // progress for every byte, once
    CHECK_FALSE(r->sha256.has_value());
    REQUIRE(w->AddBytes("z.txt", AsBytes("after"), Compression::kStored).ok());
    REQUIRE(w->Finish().ok());
    const std::vector<std::byte> archive = ReadAll(path);
    if (first.empty()) {
      first = archive;
      first_result = *r;
    }
    const bool same_bytes = archive == first;
    CHECK(same_bytes);
    CHECK(r->crc32 == first_result.crc32);
    auto z = ZipReader::Open(path);
    REQUIRE(z.ok());
    auto back = z->Read("model/words.txt");  // decodes every frame, checks size and CRC-32
    REQUIRE(back.ok());
    CHECK(std::string(reinterpret_cast<const char*>(back->data()), back->size()) == text);
    auto after = z->Read("z.txt");
    REQUIRE(after.ok());
    CHECK(after->size() == 5);
  }
  // Ten frames, each starting with zstd's magic number.
  const std::byte* data = first.data() + first_result.data_offset;
  int magics = 0;
  for (std::size_t i = 0; i + 4 <= first_result.compressed_size; ++i) {
    if (std::memcmp(data + i, "\x28\xB5\x2F\xFD", 4) == 0) ++magics;
  }
  CHECK(magics >= 10);
  // Compressed at least as well as text allows, and what push predicts.
  CHECK(first_result.compressed_size < text.size() / 2);
  auto z = ZipReader::Open(dir.file("frames.zip"));
  REQUIRE(z.ok());
  const ZipEntry& e = *z->Find("model/words.txt");
  auto framed = ZipEntryCompressesTo(*z, e, Compression::kZstd, 0, 1, /*frames=*/true);
  REQUIRE(framed.ok());
  CHECK(*framed);
  auto one_frame = ZipEntryCompressesTo(*z, e, Compression::kZstd, 0, 1, /*frames=*/false);
  REQUIRE(one_frame.ok());
  CHECK_FALSE(*one_frame);
}

TEST_CASE("carton zip: without frames a large zstd file is one frame, through zstd's workers",
          "[zip]") {
  TempDir dir;
  const std::string text = Words((6 << 20) + 7, 5);
  const std::string source = dir.file("words.txt");
  testing::WriteBytes(source, AsBytes(text));
  std::vector<std::vector<std::byte>> archives;
  for (const bool frames : {false, true}) {
    const std::string path = dir.file(frames ? "frames.zip" : "one.zip");
    ZipWriterOptions options{.zstd_workers = 2, .file_threads = 4};
    options.zstd_frames = frames;
    auto w = ZipWriter::Create(path, options);
    REQUIRE(w.ok());
    REQUIRE(w->AddFile("w.txt", source, Compression::kZstd).ok());
    REQUIRE(w->Finish().ok());
    auto z = ZipReader::Open(path);
    REQUIRE(z.ok());
    auto back = z->Read("w.txt");
    REQUIRE(back.ok());
    CHECK(back->size() == text.size());
    auto predicted = ZipEntryCompressesTo(*z, *z->Find("w.txt"), Compression::kZstd, 0, 2, frames);
    REQUIRE(predicted.ok());
    CHECK(*predicted);
    archives.push_back(ReadAll(path));
  }
  // The same bytes as zstd_workers alone gives (the archives written before
  // frames): a rebuild of such an archive turns frames off.
  const std::string plain = dir.file("plain.zip");
  {
    auto w = ZipWriter::Create(plain, {.zstd_workers = 2});
    REQUIRE(w.ok());
    REQUIRE(w->AddFile("w.txt", source, Compression::kZstd).ok());
    REQUIRE(w->Finish().ok());
  }
  CHECK(archives[0] == ReadAll(plain));
  CHECK(archives[1] != ReadAll(plain));
}

TEST_CASE("carton zip: a zstd file that shrinks while its frames are compressed fails AddFile",
          "[zip]") {
  TempDir dir;
  const std::string source = dir.file("words.txt");
  for (unsigned threads : {1u, 3u, 8u}) {
    INFO("file threads " << threads);
    testing::WriteBytes(source, AsBytes(Words((9 << 20) + 11, 7)));
    const std::string path = dir.file("shrunk.zip");
    ZipWriterOptions options{.file_threads = threads};
    // Cut on the first progress report, while the threads still read.
    options.on_read = [&](std::uint64_t) { std::filesystem::resize_file(source, 2 << 20); };
    auto w = ZipWriter::Create(path, options);
    REQUIRE(w.ok());
    auto r = w->AddFile("model/words.txt", source, Compression::kZstd);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kIoError);
    CHECK_THAT(r.status().message(), Catch::Contains("entry \"model/words.txt\""));
    CHECK_THAT(r.status().message(), Catch::Contains(source));
    CHECK_FALSE(w->Finish().ok());
    CHECK(ListDir(dir.path()) == std::vector<std::string>{"words.txt"});
  }
}

TEST_CASE("carton zip: a failed write of a frame names the entry and the archive", "[zip]") {
  TempDir dir;
  const std::string source = dir.file("words.txt");
  testing::WriteBytes(source, AsBytes(Words((9 << 20) + 11, 8)));
  const std::string path = dir.file("full.zip");
  auto w = ZipWriter::Create(path, {.file_threads = 4});
  REQUIRE(w.ok());
  Status s;
  {
    // About 3 MiB of frames: the writes past 1 MiB fail with EFBIG.
    testing::FileSizeLimit limit(1 << 20);
    s = w->AddFile("model/words.txt", source, Compression::kZstd).status();
  }
  CHECK(s.code() == StatusCode::kIoError);
  CHECK_THAT(s.message(), Catch::Contains("entry \"model/words.txt\": " + path + ": write failed"));
  CHECK_FALSE(w->Finish().ok());
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"words.txt"});
}

TEST_CASE("carton zip: a failed write of a copied stored file names the entry and the archive",
          "[zip]") {
  TempDir dir;
  const std::string source = dir.file("w.bin");
  testing::WriteBytes(source, AsBytes(Noise(8 << 20, 9)));
  const std::string path = dir.file("full.zip");
  // Set when libzip takes the first piece: with 3 threads (5 buffers) the
  // pieces from 5 MiB on are copied after it, and their writes fail.
  std::optional<testing::FileSizeLimit> limit;
  ZipWriterOptions options{.file_threads = 3};
  options.on_read = [&](std::uint64_t) {
    if (!limit) limit.emplace(2 << 20);
  };
  auto w = ZipWriter::Create(path, options);
  REQUIRE(w.ok());
  REQUIRE(w->AddFileUnread("model/w.bin", source).ok());
  Status s = w->Finish();
  limit.reset();
  CHECK(s.code() == StatusCode::kIoError);
  CHECK_THAT(s.message(), Catch::Contains("entry \"model/w.bin\": " + path + ": write failed"));
  CHECK(ListDir(dir.path()) == std::vector<std::string>{"w.bin"});
}

TEST_CASE("carton zip: a stored file removed while others are copied fails Finish, leaving nothing",
          "[zip]") {
  TempDir dir;
  std::vector<std::string> sources;
  for (int i = 0; i < 12; ++i) {
    sources.push_back(dir.file("f" + std::to_string(i) + ".bin"));
    testing::WriteBytes(sources.back(), AsBytes(Noise(2 << 20, 20 + i)));
  }
  const std::string path = dir.file("out.zip");
  // Removed when libzip takes the first piece: with 4 threads (6 buffers)
  // the copy of file 8 (from piece 16) has not started then.
  bool removed = false;
  ZipWriterOptions options{.file_threads = 4};
  options.on_read = [&](std::uint64_t) {
    if (!removed) std::filesystem::remove(sources[8]);
    removed = true;
  };
  auto w = ZipWriter::Create(path, options);
  REQUIRE(w.ok());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    REQUIRE(w->AddFileUnread("f" + std::to_string(i), sources[i]).ok());
  }
  Status s = w->Finish();
  CHECK(s.code() == StatusCode::kIoError);
  CHECK_THAT(s.message(), Catch::Contains("entry \"f8\": " + sources[8] + ": cannot open"));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(ListDir(dir.path()).size() == 11);
}

TEST_CASE("carton zip: a stored file replaced by a pipe before its copy fails Finish at once",
          "[zip]") {
  TempDir dir;
  const std::string source = dir.file("w.bin");
  for (unsigned threads : {0u, 2u}) {
    INFO("file threads " << threads);
    testing::WriteBytes(source, AsBytes(Noise(1 << 20, 5)));
    const std::string path = dir.file("out.zip");
    auto w = ZipWriter::Create(path, {.file_threads = threads});
    REQUIRE(w.ok());
    REQUIRE(w->AddFileUnread("model/w.bin", source).ok());
    // Opening a pipe with no writer waits for one: the copy must not.
    std::filesystem::remove(source);
    REQUIRE(::mkfifo(source.c_str(), 0600) == 0);
    Status s = w->Finish();
    CHECK(s.code() == StatusCode::kIoError);
    CHECK_THAT(s.message(), Catch::Contains("entry \"model/w.bin\": " + source));
    CHECK_FALSE(std::filesystem::exists(path));
    std::filesystem::remove(source);
  }
}

TEST_CASE("carton zip: a pipe given as a file is refused at once", "[zip]") {
  TempDir dir;
  const std::string pipe = dir.file("pipe");
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  auto w = ZipWriter::Create(dir.file("out.zip"), {.file_threads = 2});
  REQUIRE(w.ok());
  for (Compression method : {Compression::kStored, Compression::kZstd}) {
    auto r = w->AddFile("p", pipe, method);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains(pipe + " is not a regular file"));
  }
  auto r = w->AddFileUnread("p", pipe);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
}
