// Removing cache entries and blobs: lock files go with their entries
// without splitting concurrent lockers, loads running during gc succeed,
// and gc --max-size evicts entries and LINKS blobs least recently used
// first.
#include "carton/loader/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "carton/links/blob_cache.h"
#include "carton/loader/loader.h"
#include "loader/loader_testing.h"
#include "nginx_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// The names in <cache>/locks.
std::vector<std::string> LockFiles(const std::string& cache) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache + "/locks", ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> LockFilesOf(const std::string& cache, const std::string& hex) {
  std::vector<std::string> out;
  for (const auto& name : LockFiles(cache)) {
    if (name.find(hex) != std::string::npos) out.push_back(name);
  }
  return out;
}

// Sets the last use of an entry (its record's mtime) or a blob (its mtime).
void SetLastUsed(const std::string& path, std::chrono::seconds ago) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - ago);
}

std::string RecordOf(const std::string& cache, const std::string& hash) {
  return cache + "/cartons/" + hash + "/.carton-cache-entry.json";
}

}  // namespace

TEST_CASE("loader cache: rm and gc remove the lock files of the entries they remove",
          "[loader][cache][locks]") {
  TempDir tmp;
  const std::string cache = tmp.file("cache");
  ScopedEnv env("CARTON_CACHE_DIR", cache);
  std::string a = PackDir(MakeModelDir(tmp.file("a")), tmp.file("a.carton"));
  std::string b = PackDir(MakeModelDir(tmp.file("b"), 2000), tmp.file("b.carton"));
  std::string c = PackDir(MakeModelDir(tmp.file("c"), 3000), tmp.file("c.carton"));
  REQUIRE(testing::LoadAt(tmp.file("a.carton")).ok());
  REQUIRE(testing::LoadAt(tmp.file("b.carton")).ok());
  auto held = testing::LoadAt(tmp.file("c.carton"));
  REQUIRE(held.ok());
  CHECK(LockFilesOf(cache, a) ==
        std::vector<std::string>{"carton-" + a + ".lock", "carton-" + a + ".use"});
  loader::CartonCache cc(cache);

  auto rm = Run("CARTON_CACHE_DIR=" + Q(cache) + " " + CartonBin() + " cache rm " + a);
  CHECK(rm.exit_code == 0);
  CHECK_FALSE(fs::exists(cache + "/cartons/" + a));
  CHECK(LockFilesOf(cache, a).empty());

  // c is in use: kept with its lock files; b goes with its own.
  auto gc = cc.Gc(0);
  REQUIRE(gc.ok());
  CHECK(gc->removed == std::vector<std::string>{b});
  CHECK(gc->skipped_in_use == std::vector<std::string>{c});
  CHECK(LockFilesOf(cache, b).empty());
  CHECK(fs::exists(cache + "/locks/carton-" + c + ".use"));
  CHECK(cc.Remove(*manifest::ParseHex(c)).code() == StatusCode::kInvalidArgument);
  CHECK(fs::exists(cache + "/locks/carton-" + c + ".use"));
  held = Status(StatusCode::kNotFound, "released");
  CHECK(cc.Remove(*manifest::ParseHex(c)).ok());
  CHECK(LockFiles(cache).empty());

  // A load that fails leaves lock files for a hash with no entry; gc
  // removes them.
  std::string bytes = ReadText(tmp.file("a.carton"));
  bytes[bytes.find("notes\n")] = 'N';
  WriteBytes(tmp.file("bad.carton"), AsBytes(bytes));
  CHECK(testing::LoadAt(tmp.file("bad.carton")).status().code() == StatusCode::kCorrupt);
  CHECK_FALSE(LockFiles(cache).empty());
  REQUIRE(cc.Gc(1ull << 40).ok());
  CHECK(LockFiles(cache).empty());
}

TEST_CASE("loader cache: a load waiting on a lock file that is removed locks the new file",
          "[loader][cache][locks]") {
  TempDir tmp;
  const std::string cache = tmp.file("cache");
  ScopedEnv env("CARTON_CACHE_DIR", cache);
  std::string hash = PackDir(MakeModelDir(tmp.file("m")), tmp.file("m.carton"));
  REQUIRE(testing::LoadAt(tmp.file("m.carton")).ok());
  const std::string use = cache + "/locks/carton-" + hash + ".use";

  // Play a remover: hold the use lock exclusively while a load opens the
  // file and waits on it, then unlink the file and let go.
  int fd = ::open(use.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  std::optional<Result<loader::LoadedCarton>> loaded;
  std::thread loader_thread([&] { loaded = testing::LoadAt(tmp.file("m.carton")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(::unlink(use.c_str()) == 0);
  ::close(fd);
  loader_thread.join();
  REQUIRE(loaded->ok());
  // The load holds its lock on the file now at the path, so a removal
  // sees the entry in use.
  CHECK(fs::exists(use));
  loader::CartonCache cc(cache);
  CHECK(cc.Remove(*manifest::ParseHex(hash)).code() == StatusCode::kInvalidArgument);
  auto gc = cc.Gc(0);
  REQUIRE(gc.ok());
  CHECK(gc->skipped_in_use == std::vector<std::string>{hash});
  CHECK(fs::exists((*loaded)->model_dir() + "/notes.txt"));
}

TEST_CASE("loader cache: loads running during gc all succeed", "[loader][cache][concurrency]") {
  TempDir tmp;
  const std::string cache = tmp.file("cache");
  std::string a = PackDir(MakeModelDir(tmp.file("a")), tmp.file("a.carton"));
  std::string b = PackDir(MakeModelDir(tmp.file("b"), 20'000), tmp.file("b.carton"));
  const std::string carton = "CARTON_CACHE_DIR=" + Q(cache) + " " + CartonBin();
  const std::string fails = tmp.file("fails"), outs = tmp.file("outs");
  // Three processes load the two cartons over and over while gc removes
  // whatever is not in use, until they are done.
  std::string cmd = "pids=''; ";
  for (int i = 0; i < 3; ++i) {
    cmd += "( for k in 1 2 3 4 5 6; do for m in a b; do " + carton + " load --json " +
           Q(tmp.file("")) + "$m.carton >> " + Q(outs) + " 2>>" + Q(fails) + " || echo load >> " +
           Q(fails) + "; done; done ) & pids=\"$pids $!\"; ";
  }
  cmd +=
      "running() { for p in $pids; do kill -0 $p 2>/dev/null && return 0; done; return 1; }; "
      "while running; do " +
      carton + " cache gc --max-size 0 >/dev/null 2>>" + Q(fails) + " || echo gc >> " + Q(fails) +
      "; done; wait";
  REQUIRE(Run(cmd).exit_code == 0);
  CHECK(ReadText(fails).empty());
  // Every load printed its result; gc removed entries between them, so
  // more than the first two were misses.
  int loads = 0, misses = 0;
  std::istringstream lines(ReadText(outs));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    CHECK((j["manifest_hash"] == a || j["manifest_hash"] == b));
    ++loads;
    if (!j["cache_hit"].get<bool>()) ++misses;
  }
  CHECK(loads == 36);
  CHECK(misses > 2);

  loader::CartonCache cc(cache);
  auto left = cc.List();
  REQUIRE(left.ok());
  for (const auto& e : *left) CHECK(cc.Verify(*manifest::ParseHex(e.hash))->ok());
  auto gc = cc.Gc(0);
  REQUIRE(gc.ok());
  CHECK(cc.List()->empty());
  CHECK(LockFiles(cache).empty());
}

TEST_CASE("loader cache: gc --max-size evicts LINKS blobs with entries, least recently used first",
          "[loader][cache][links]") {
  TempDir tmp;
  NginxServer nginx;
  const std::string cache = tmp.file("cache");
  ScopedEnv env("CARTON_CACHE_DIR", cache);
  const std::string carton = "CARTON_CACHE_DIR=" + Q(cache) + " " + CartonBin();
  // A carton whose two large files (about 1.2 MB each) are blobs on nginx.
  std::string hash = PackDir(MakeModelDir(tmp.file("m"), 300'000), tmp.file("m.carton"));
  REQUIRE(Run(CartonBin() + " shrink " + Q(tmp.file("m.carton")) + " -o " +
              Q(nginx.www() + "/s.carton") + " --url-prefix " + nginx.Url("/blobs") + " --blobs " +
              Q(nginx.www() + "/blobs") + " --min-size 100000")
              .exit_code == 0);
  loader::CartonCache cc(cache);
  links::BlobCache blob_cache(cache);

  SECTION("blobs shared with an entry are evicted after it") {
    auto loaded = testing::LoadAt(nginx.Url("/s.carton"));
    REQUIRE(loaded.ok());
    auto usage = cc.Blobs();
    REQUIRE(usage.ok());
    CHECK(usage->count == 2);
    CHECK(usage->bytes > 2'400'000);
    CHECK(usage->shared_bytes == usage->bytes);  // hard links into the entry
    const std::uint64_t entry_size = cc.List()->at(0).size;
    CHECK(entry_size > usage->bytes);

    auto list = Run(carton + " cache list");
    CHECK(list.exit_code == 0);
    CHECK_THAT(list.out, Catch::Contains(hash + "  "));
    CHECK_THAT(list.out,
               Catch::Contains("blobs  2 files  2.3 MiB  (2.3 MiB shared with cached cartons)"));
    auto json = Run(carton + " cache list --json");
    REQUIRE(json.exit_code == 0);
    auto j = nlohmann::json::parse(json.out);
    CHECK(j["entries"][0]["manifest_hash"] == hash);
    CHECK(j["blobs"]["count"] == 2);
    CHECK(j["blobs"]["bytes"] == usage->bytes);
    CHECK(j["blobs"]["shared_bytes"] == usage->bytes);

    // In use: nothing can go, and shared blobs free nothing.
    auto kept = cc.Gc(0);
    REQUIRE(kept.ok());
    CHECK(kept->skipped_in_use == std::vector<std::string>{hash});
    CHECK(kept->removed_blobs.empty());
    CHECK(kept->remaining == entry_size);

    loaded = Status(StatusCode::kNotFound, "released");
    auto gc = Run(carton + " cache gc --max-size 0");
    CHECK(gc.exit_code == 0);
    CHECK_THAT(gc.out, Catch::Contains("removed " + hash));
    CHECK_THAT(gc.out, Catch::Contains("removed blob "));
    CHECK_THAT(gc.out, Catch::Contains(", 0 B remain"));
    CHECK(cc.List()->empty());
    CHECK(cc.Blobs()->count == 0);
    CHECK(LockFiles(cache).empty());
    // The next load fetches them again.
    const int before = nginx.Requests("/blobs/");
    REQUIRE(testing::LoadAt(nginx.Url("/s.carton")).ok());
    CHECK(nginx.Requests("/blobs/") == before + 2);
  }

  SECTION("entries and blobs in one least-recently-used order") {
    // Blobs without an entry (verify --fetch), and an unrelated entry.
    REQUIRE(Run(carton + " verify --fetch " + nginx.Url("/s.carton")).exit_code == 0);
    std::string other = PackDir(MakeModelDir(tmp.file("o")), tmp.file("o.carton"));
    REQUIRE(testing::LoadAt(tmp.file("o.carton")).ok());
    auto blobs = blob_cache.List();
    REQUIRE(blobs.ok());
    REQUIRE(blobs->size() == 2);
    const links::BlobInfo old_blob = (*blobs)[0], new_blob = (*blobs)[1];
    CHECK(old_blob.links == 1);
    SetLastUsed(old_blob.path, std::chrono::seconds(3000));
    SetLastUsed(RecordOf(cache, other), std::chrono::seconds(2000));
    SetLastUsed(new_blob.path, std::chrono::seconds(1000));
    const std::uint64_t other_size = cc.List()->at(0).size;

    auto one = cc.Gc(new_blob.size + other_size);
    REQUIRE(one.ok());
    CHECK(one->removed_blobs == std::vector<std::string>{manifest::ToHex(old_blob.digest)});
    CHECK(one->removed.empty());
    CHECK(one->freed == old_blob.size);
    CHECK(one->remaining == new_blob.size + other_size);
    CHECK(LockFilesOf(cache, manifest::ToHex(old_blob.digest)).empty());

    auto two = cc.Gc(new_blob.size);
    REQUIRE(two.ok());
    CHECK(two->removed == std::vector<std::string>{other});
    CHECK(two->removed_blobs.empty());
    CHECK(fs::exists(new_blob.path));

    // Get marks a blob as used.
    REQUIRE(blob_cache.Get(new_blob.digest).ok());
    CHECK(fs::last_write_time(new_blob.path) >
          fs::file_time_type::clock::now() - std::chrono::seconds(100));
    auto three = cc.Gc(0);
    REQUIRE(three.ok());
    CHECK(three->removed_blobs.size() == 1);
    CHECK(three->remaining == 0);
    CHECK(LockFiles(cache).empty());
  }
}

// The directory load prints holds every file, the mapped ones too; cache
// verify checks those copies as well as the bytes in the source.
TEST_CASE("loader cache: mapped files are in the entry, and cache verify checks their copies",
          "[loader][cache]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 100000), tmp.file("m.carton"), PackCompression::kStored);
  auto c = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(c.ok());
  REQUIRE(c->stats().mapped_from_carton);
  const std::string copy = c->model_dir() + "/weights.safetensors";
  REQUIRE(ReadText(copy) == ReadText(tmp.file("m/model/weights.safetensors")));
  loader::CartonCache cc(tmp.file("cache"));
  CHECK(cc.Verify(*c->manifest_hash())->ok());
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x7f');
  }
  auto bad = cc.Verify(*c->manifest_hash());
  REQUIRE(bad.ok());
  REQUIRE_FALSE(bad->ok());
  bool named = false;
  for (const auto& p : bad->problems) named |= p.find("model/weights.safetensors") == 0;
  CHECK(named);
}

// Without --max-size, gc removes only what nothing uses: a blob no cached
// carton links goes, the cached cartons stay.
TEST_CASE("loader cache: gc without a size removes only what nothing uses", "[loader][cache]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 1000), tmp.file("m.carton"), PackCompression::kStored);
  REQUIRE(testing::LoadAt(tmp.file("m.carton")).ok());
  const std::string orphan = "nothing links these bytes";
  const std::string hex = manifest::ToHex(manifest::Sha256Of(AsBytes(orphan)));
  std::filesystem::create_directories(tmp.file("cache/blobs/sha256"));
  std::ofstream(tmp.file("cache/blobs/sha256/" + hex)) << orphan;
  auto r = Run("CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + CartonBin() + " cache gc");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("removed blob " + hex));
  CHECK_FALSE(std::filesystem::exists(tmp.file("cache/blobs/sha256/" + hex)));
  loader::CartonCache cc(tmp.file("cache"));
  CHECK(cc.List()->size() == 1);
}

// Sizes are what the cache takes on disk, as du counts it, not the bytes
// the files would hold.
TEST_CASE("loader cache: an entry's size is the disk it takes", "[loader][cache]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 100000), tmp.file("m.carton"), PackCompression::kStored);
  auto c = testing::LoadAt(tmp.file("m.carton"));
  REQUIRE(c.ok());
  loader::CartonCache cc(tmp.file("cache"));
  auto list = cc.List();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  auto du = Run("du -s -B1 '" + c->root_dir() + "'");
  REQUIRE(du.exit_code == 0);
  CHECK(std::to_string((*list)[0].size) == du.out.substr(0, du.out.find('\t')));
  CHECK((*list)[0].size > 800000);  // the weights' copy and the source .carton
}

TEST_CASE("loader cache: rm and verify take a unique prefix of a hash", "[loader][cache]") {
  TempDir tmp;
  ScopedEnv cache("CARTON_CACHE_DIR", tmp.file("cache"));
  PackDir(MakeModelDir(tmp.file("m"), 100), tmp.file("m.carton"), PackCompression::kStored);
  std::string hex;
  {
    auto c = testing::LoadAt(tmp.file("m.carton"));  // released before rm
    REQUIRE(c.ok());
    hex = manifest::ToHex(*c->manifest_hash());
  }
  const std::string bin = "CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + CartonBin();
  CHECK(Run(bin + " cache verify " + hex.substr(0, 6)).exit_code == 0);
  auto short_prefix = Run(bin + " cache rm ab");
  CHECK(short_prefix.exit_code == 2);
  CHECK_THAT(short_prefix.err, Catch::Contains("or a prefix of one (at least 4)"));
  const std::string other = hex[0] == '0' ? "1111" : "0000";
  auto none = Run(bin + " cache rm " + other);
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("no cached carton's manifest hash starts so"));
  auto rm = Run(bin + " cache rm --json " + hex.substr(0, 8));
  INFO(rm.err);
  CHECK(rm.exit_code == 0);
  CHECK_THAT(rm.out, Catch::Contains(hex));
  CHECK(loader::CartonCache(tmp.file("cache")).List()->empty());
}
