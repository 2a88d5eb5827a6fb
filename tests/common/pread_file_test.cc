// PreadFile (common/pread_file.h): reads, bounds, short reads and the
// change check, against real files.
#include "carton/common/pread_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "testing.h"

using namespace carton;

namespace {

std::string Read(const PreadFile& f, std::uint64_t offset, std::size_t n) {
  std::string out(n, '\0');
  Status s = f.ReadAt(offset, MutableByteView(reinterpret_cast<std::byte*>(out.data()), n));
  return s.ok() ? out : s.ToString();
}

}  // namespace

TEST_CASE("common: PreadFile reads ranges and refuses reads past its size", "[common]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("hello world"));
  auto f = PreadFile::Open(dir.file("a"));
  REQUIRE(f.ok());
  CHECK((*f)->size() == 11);
  CHECK((*f)->name() == dir.file("a"));
  CHECK(Read(**f, 6, 5) == "world");
  CHECK(Read(**f, 11, 0).empty());
  CHECK(Read(**f, 7, 5) ==
        "invalid argument: " + dir.file("a") + ": read of 5 bytes at 7 is past the end (11 bytes)");
  CHECK(Read(**f, UINT64_MAX, 2).find("is past the end") != std::string::npos);
  CHECK((*f)->CheckUnchanged().ok());
}

TEST_CASE("common: PreadFile refuses missing files and directories", "[common]") {
  testing::TempDir dir;
  auto missing = PreadFile::Open(dir.file("nope"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  auto directory = PreadFile::Open(dir.path().string());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.status().code() == StatusCode::kInvalidArgument);
  CHECK(directory.status().message() == dir.path().string() + ": not a regular file");
}

TEST_CASE("common: PreadFile reports a file that shrank as a short read", "[common]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("hello world"));
  auto f = PreadFile::Open(dir.file("a"));
  REQUIRE(f.ok());
  REQUIRE(::truncate(dir.file("a").c_str(), 8) == 0);
  CHECK(Read(**f, 6, 5) == "io error: " + dir.file("a") +
                               ": short read: the file ends at 8 but was 11 bytes when opened (it "
                               "shrank while being read)");
  CHECK((*f)->CheckUnchanged().message().find(": changed while loading (11 bytes when opened, 8 "
                                              "now") != std::string::npos);
}

TEST_CASE("common: PreadFile tells a rewritten file, not a renamed or linked one", "[common]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("hello world"));
  struct timespec old[2] = {{1600000000, 0}, {1600000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, dir.file("a").c_str(), old, 0) == 0);
  auto f = PreadFile::Open(dir.file("a"));
  REQUIRE(f.ok());
  // Same bytes under other names: no change.
  REQUIRE(::link(dir.file("a").c_str(), dir.file("b").c_str()) == 0);
  REQUIRE(::rename(dir.file("a").c_str(), dir.file("c").c_str()) == 0);
  CHECK((*f)->CheckUnchanged().ok());
  {
    std::fstream out(dir.file("c"), std::ios::in | std::ios::out | std::ios::binary);
    out.write("HELLO", 5);
  }
  Status changed = (*f)->CheckUnchanged();
  CHECK(changed.code() == StatusCode::kIoError);
  CHECK(changed.message().find(dir.file("a") + ": changed while loading") == 0);
}
