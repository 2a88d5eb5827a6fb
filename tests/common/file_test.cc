#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/fd_io.h"
#include "carton/common/mapped_file.h"
#include "carton/common/unique_fd.h"
#include "testing.h"

using namespace carton;
namespace fs = std::filesystem;

TEST_CASE("common: MappedFile maps a file and handles zero length", "[common]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("hello"));
  testing::WriteBytes(dir.file("empty"), {});
  auto m = MappedFile::Open(dir.file("a"));
  REQUIRE(m.ok());
  CHECK(AsChars(m->bytes()) == "hello");
  MappedFile moved = std::move(m).value();
  CHECK(moved.size() == 5);
  auto e = MappedFile::Open(dir.file("empty"));
  REQUIRE(e.ok());
  CHECK(e->bytes().empty());
}

TEST_CASE("common: MappedFile reports missing files and directories", "[common]") {
  testing::TempDir dir;
  auto m = MappedFile::Open(dir.file("nope"));
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kNotFound);
  CHECK(m.status().message().find("nope") != std::string::npos);
  auto d = MappedFile::Open(dir.path().string());
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("common: AtomicFile renames into place only on commit", "[common]") {
  testing::TempDir dir;
  std::string path = dir.file("out.bin");
  {
    auto f = AtomicFile::Create(path);
    REQUIRE(f.ok());
    REQUIRE(f->Write(AsBytes("partial")).ok());
    CHECK_FALSE(fs::exists(path));
    // Destroyed without Commit: nothing is left behind.
  }
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::is_empty(dir.path()));

  auto f = AtomicFile::Create(path);
  REQUIRE(f.ok());
  std::string big(3 << 20, 'x');  // larger than the buffer
  REQUIRE(f->Write(AsBytes("head")).ok());
  REQUIRE(f->Write(AsBytes(big)).ok());
  REQUIRE(f->Commit().ok());
  CHECK(fs::file_size(path) == 4 + big.size());
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("common: AtomicFile WriteAt fills in earlier bytes, buffered or not", "[common]") {
  testing::TempDir dir;
  for (std::size_t buffer : {std::size_t{0}, std::size_t{16}, std::size_t{256} << 10}) {
    std::string path = dir.file("at-" + std::to_string(buffer));
    auto f = AtomicFile::Create(path, {.buffer_size = buffer});
    REQUIRE(f.ok());
    std::string big(600 << 10, 'b');  // more than one largest write
    REQUIRE(f->Write(AsBytes("0123456789")).ok());
    REQUIRE(f->Write(AsBytes(big)).ok());
    REQUIRE(f->WriteAt(2, AsBytes("xy")).ok());  // inside what was buffered
    REQUIRE(f->WriteAt(10 + big.size() - 1, AsBytes("E")).ok());
    REQUIRE(f->Write(AsBytes("tail")).ok());
    CHECK(f->size() == 10 + big.size() + 4);
    REQUIRE(f->Commit().ok());
    std::string expected = "01xy456789" + big + "tail";
    expected[10 + big.size() - 1] = 'E';
    CHECK(testing::ReadText(path) == expected);
  }
}

TEST_CASE("common: AtomicFile Preallocate sets the length, Commit cuts back to what was written",
          "[common]") {
  testing::TempDir dir;
  const std::string path = dir.file("p.bin");
  auto f = AtomicFile::Create(path);
  REQUIRE(f.ok());
  REQUIRE(f->Preallocate(1 << 20).ok());
  // Before Commit the temporary file is the directory's only file.
  std::vector<fs::path> files(fs::directory_iterator(dir.path()), fs::directory_iterator{});
  REQUIRE(files.size() == 1);
  CHECK(fs::file_size(files[0]) == 1u << 20);
  REQUIRE(f->Write(AsBytes("0123456789")).ok());
  REQUIRE(f->Commit().ok());
  CHECK(testing::ReadText(path) == "0123456789");

  // Exactly the reserved size: nothing to cut.
  auto g = AtomicFile::Create(path);
  REQUIRE(g.ok());
  REQUIRE(g->Preallocate(5).ok());
  REQUIRE(g->Write(AsBytes("abcde")).ok());
  REQUIRE(g->Commit().ok());
  CHECK(testing::ReadText(path) == "abcde");

  // Aborted: no temporary left, the destination untouched.
  {
    auto h = AtomicFile::Create(path);
    REQUIRE(h.ok());
    REQUIRE(h->Preallocate(4096).ok());
  }
  CHECK(testing::ReadText(path) == "abcde");
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

namespace {

// The bytes of `path`'s temporary file (the directory's only file) that
// have storage behind them.
std::uint64_t AllocatedBytes(const std::string& dir) {
  std::vector<fs::path> files(fs::directory_iterator(dir), fs::directory_iterator{});
  REQUIRE(files.size() == 1);
  struct stat st;
  REQUIRE(::stat(files[0].c_str(), &st) == 0);
  CHECK(static_cast<std::uint64_t>(st.st_size) == std::uint64_t{8} << 20);
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE("common: AtomicFile Preallocate reserves blocks on disk, only the length on tmpfs",
          "[common]") {
  testing::TempDir dir;
  struct statfs fs_info;
  REQUIRE(::statfs(dir.path().c_str(), &fs_info) == 0);
  if (fs_info.f_type != TMPFS_MAGIC) {
    auto f = AtomicFile::Create(dir.file("disk.bin"));
    REQUIRE(f.ok());
    REQUIRE(f->Preallocate(std::uint64_t{8} << 20).ok());
    // Where fallocate works (ext4, xfs) the blocks are there; elsewhere the
    // length alone is set, as on tmpfs.
    const std::uint64_t allocated = AllocatedBytes(dir.path());
    CHECK((allocated >= (std::uint64_t{8} << 20) || allocated == 0));
  }
  // tmpfs would zero every page now, on one thread: the length alone.
  char shm[] = "/dev/shm/carton-prealloc-XXXXXX";
  if (::statfs("/dev/shm", &fs_info) != 0 || fs_info.f_type != TMPFS_MAGIC ||
      ::mkdtemp(shm) == nullptr) {
    CARTON_SKIP("no tmpfs at /dev/shm: its case is not checked");
  }
  {
    auto f = AtomicFile::Create(std::string(shm) + "/t.bin");
    REQUIRE(f.ok());
    REQUIRE(f->Preallocate(std::uint64_t{8} << 20).ok());
    CHECK(AllocatedBytes(shm) < (std::uint64_t{1} << 20));
    REQUIRE(f->Write(AsBytes("tmpfs")).ok());
    REQUIRE(f->Commit().ok());
  }
  CHECK(testing::ReadText(std::string(shm) + "/t.bin") == "tmpfs");
  fs::remove_all(shm);
}

TEST_CASE("common: AtomicFile Preallocate reports a size the disk cannot hold", "[common]") {
  testing::TempDir dir;
  auto f = AtomicFile::Create(dir.file("huge.bin"));
  REQUIRE(f.ok());
  Status s = f->Preallocate(std::uint64_t{1} << 62);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(s.message().find(dir.file("huge.bin") + ": cannot reserve 4611686018427387904 bytes") == 0);
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("common: AtomicFile respects the umask", "[common]") {
  testing::TempDir dir;
  mode_t old = ::umask(027);
  Status s = WriteFileAtomically(dir.file("m"), AsBytes("x"));
  ::umask(old);
  REQUIRE(s.ok());
  struct stat st;
  REQUIRE(::stat(dir.file("m").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("common: AtomicFile fails cleanly in a missing directory", "[common]") {
  testing::TempDir dir;
  auto f = AtomicFile::Create(dir.file("no/such/dir/out"));
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == StatusCode::kIoError);
  CHECK(f.status().message().find("no/such/dir/out") != std::string::npos);
}

TEST_CASE("common: MappedFile ReadAt reads ranges and checks bounds", "[common]") {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("a"), AsBytes("0123456789"));
  auto m = MappedFile::Open(dir.file("a"));
  REQUIRE(m.ok());
  std::vector<std::byte> out(4);
  REQUIRE(m->ReadAt(3, out).ok());
  CHECK(AsChars(out) == "3456");
  CHECK(m->ReadAt(7, out).code() == StatusCode::kInvalidArgument);
  CHECK(m->ReadAt(~0ull, out).code() == StatusCode::kInvalidArgument);
  std::vector<std::byte> none;
  CHECK(m->ReadAt(10, none).ok());
}

TEST_CASE("common: ForEachMappedStep visits a mapping in order, in bounded steps", "[common]") {
  testing::TempDir tmp;
  const std::size_t size = kMappedStep * 2 + 12345;
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7);
  testing::WriteBytes(tmp.file("f"), AsBytes(bytes));
  auto f = MappedFile::Open(tmp.file("f"));
  REQUIRE(f.ok());
  std::string seen;
  std::vector<std::size_t> steps;
  REQUIRE(ForEachMappedStep(f->bytes(), [&](ByteView step) {
            steps.push_back(step.size());
            seen.append(AsChars(step));
            return Status::Ok();
          }).ok());
  CHECK(seen == bytes);
  CHECK(steps == std::vector<std::size_t>{kMappedStep, kMappedStep, 12345});
  // The first error stops it and is returned.
  int calls = 0;
  Status s = ForEachMappedStep(f->bytes(), [&](ByteView) {
    ++calls;
    return IoError("disk full");
  });
  CHECK(s.message() == "disk full");
  CHECK(calls == 1);
  CHECK(ForEachMappedStep(ByteView(), [](ByteView) { return Internal("never called"); }).ok());
}

TEST_CASE("common: PreadFull reads to the end of a range or the file, PwriteFull writes it all",
          "[common]") {
  testing::TempDir dir;
  const std::string path = dir.file("io.bin");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(fd.valid());
  REQUIRE(PwriteFull(fd.get(), 3, AsBytes("abcdef"), path).ok());
  std::byte buf[16];
  auto got = PreadFull(fd.get(), 3, {buf, 4}, path);
  REQUIRE(got.ok());
  CHECK(*got == 4);
  CHECK(std::string(reinterpret_cast<const char*>(buf), 4) == "abcd");
  got = PreadFull(fd.get(), 5, {buf, sizeof(buf)}, path);  // past the end: what there is
  REQUIRE(got.ok());
  CHECK(*got == 4);
  got = PreadFull(fd.get(), 100, {buf, sizeof(buf)}, path);
  REQUIRE(got.ok());
  CHECK(*got == 0);

  UniqueFd read_only(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(read_only.valid());
  Status s = PwriteFull(read_only.get(), 0, AsBytes("x"), path);
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(s.message().find(path + ": write failed: ") == 0);
  got = PreadFull(-1, 0, {buf, 1}, path);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().message().find(path + ": read failed: ") == 0);
}
