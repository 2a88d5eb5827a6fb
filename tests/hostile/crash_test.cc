// Crash safety and full disks, through the built `carton` binary.
//
// Every command that writes output (pack, unpack, shrink and its blobs,
// the loader's cache entries) is killed with SIGKILL at many points while
// it runs: the destination must then hold either nothing or the complete
// output (byte-identical to an uninterrupted run), and a later run must
// succeed despite whatever the killed runs left behind. Adding a command is
// one more entry in Writers().
//
// Then the disk fills up under pack and unpack: first through RLIMIT_FSIZE
// (writes fail with EFBIG; works everywhere), then on a real 1 MiB tmpfs
// when this process may mount one in a private mount namespace.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/manifest/sha256.h"
#include "hostile_testing.h"

extern char** environ;

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

using carton::testing::Noise;
using carton::testing::Spawn;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// A model directory of `files` files of `size` bytes each.
void MakeModel(const std::string& dir, int files, std::size_t size) {
  auto tree = ValidCartonFiles();
  for (int i = 0; i < files; ++i)
    tree["model/part" + std::to_string(i) + ".bin"] = Noise(size, i + 1);
  for (const auto& [path, content] : tree) {
    fs::create_directories((fs::path(dir) / path).parent_path());
    WriteBytes((fs::path(dir) / path).string(), AsBytes(content));
  }
}

// Text with some redundancy, so that deflate and zstd have work to do in
// both directions.
std::string Compressible(std::size_t n, std::uint64_t seed) {
  const std::string noise = Noise(n / 4 + 1, seed);
  std::string out;
  out.reserve(n + 32);
  for (std::size_t i = 0; out.size() < n; ++i) {
    const int value = static_cast<signed char>(noise[i % noise.size()]);
    out += "w" + std::to_string(i % 9973) + "=" + std::to_string(value) + "\n";
  }
  out.resize(n);
  return out;
}

int Wait(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

// Inputs shared by the writers, made once in the scratch directory `dir`:
// model/ (noise) and input.carton packed from it (so stored), model-z/
// (compressible) and input-z.carton packed from it with deflate, whose
// manifest hash names its cache entry.
struct Inputs {
  std::string dir;
  std::string compressed_hash;
};

// One command that writes output, and how to tell a complete output.
struct Writer {
  std::string name;
  // The command line writing `dest` in the writer's own directory `out`.
  std::function<std::vector<std::string>(const std::string& out, const std::string& dest)> argv;
  // Where the output goes inside `out`, when not `out`/dest.
  std::function<std::string(const std::string& out)> dest = {};
  // Environment for the command, given `out`.
  std::function<std::vector<std::string>(const std::string& out)> env = {};
  // What a killed run may leave beside the destination: names starting
  // with this (hidden, and never the destination's name).
  std::string leftover = ".dest.";
  // Before each killed run (the last run finds the leftovers as they are).
  std::function<void(const std::string& out)> reset = {};
  // After each killed run and after the last run: the writer's other
  // outputs, and for commands that reuse their work, a run to completion.
  std::function<void(const std::string& out, const std::string& dest)> check = {};
};

std::string CacheEnv(const std::string& out) { return "CARTON_CACHE_DIR=" + out + "/cache"; }
std::string CacheEnvForShell(const std::string& out) {
  return "CARTON_CACHE_DIR=" + Q(out + "/cache") + " ";
}

// Every blob in `blobs` under its final name is whole: its sha256 is its
// name. Returns how many there are.
std::size_t CheckBlobs(const std::string& blobs) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(blobs, ec)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.') continue;  // a temporary file of a killed run
    INFO(name);
    auto digest = manifest::HashFile(e.path().string());
    REQUIRE(digest.ok());
    CHECK(manifest::ToHex(*digest) == name);
    ++n;
  }
  return n;
}

constexpr int kParts = 6;

std::vector<Writer> Writers(const Inputs& in) {
  const std::string dir = in.dir;
  const std::string hash = in.compressed_hash;
  const std::string blobs = dir + "/shrink-blobs";
  return {
      {"pack",
       [dir](const std::string&, const std::string& dest) {
         return std::vector<std::string>{CartonBin(),     "pack",    dir + "/model", "-o", dest,
                                         "--compression", "deflate", "--level",      "1"};
       }},
      {"unpack",
       [dir](const std::string&, const std::string& dest) {
         return std::vector<std::string>{CartonBin(), "unpack", dir + "/input.carton", dest};
       }},
      {"shrink",
       [dir, blobs](const std::string&, const std::string& dest) {
         return std::vector<std::string>{CartonBin(),
                                         "shrink",
                                         dir + "/input-z.carton",
                                         "-o",
                                         dest,
                                         "--url-prefix",
                                         "https://example.com/blobs",
                                         "--blobs",
                                         blobs,
                                         "--min-size",
                                         "1000000"};
       },
       {},
       {},
       ".dest.",
       // Without its blobs, each killed run writes them again.
       [blobs](const std::string&) { fs::remove_all(blobs); },
       [blobs](const std::string&, const std::string& dest) {
         const std::size_t n = CheckBlobs(blobs);
         if (fs::exists(dest)) CHECK(n == kParts);
       }},
      {"load",
       [dir](const std::string&, const std::string&) {
         return std::vector<std::string>{CartonBin(), "load", dir + "/input-z.carton"};
       },
       [hash](const std::string& out) { return out + "/cache/cartons/" + hash; },
       [](const std::string& out) { return std::vector<std::string>{CacheEnv(out)}; },
       ".tmp-" + hash + "-",
       {},
       // A later load must succeed and leave a cache that verifies.
       [dir, hash](const std::string& out, const std::string& dest) {
         const std::string env = CacheEnvForShell(out);
         auto load = Run(env + CartonBin() + " load " + Q(dir + "/input-z.carton"));
         CHECK(load.exit_code == 0);
         CHECK(load.out == dest + "/model\n");
         auto verify = Run(env + CartonBin() + " cache verify");
         CHECK(verify.exit_code == 0);
         CHECK(verify.err.empty());
       }},
  };
}

// The destination as a comparable value: a file's bytes, or a tree's
// listing with every file's bytes.
std::string Snapshot(const std::string& dest) {
  if (fs::is_regular_file(dest)) return ReadText(dest);
  std::string out;
  for (const auto& rel : ListTree(dest)) {
    out += rel + "\n";
    if (rel.back() != '/') out += ReadText(dest + "/" + rel) + "\n";
  }
  return out;
}

void RemoveDest(const std::string& dest) {
  std::error_code ec;
  fs::remove_all(dest, ec);
}

}  // namespace

TEST_CASE("crash: a killed writer never leaves a partial output", "[hostile][crash]") {
  TempDir tmp;
  Inputs in;
  in.dir = tmp.path().string();
  const std::string dir = in.dir;
  MakeModel(dir + "/model", kParts, 3 << 20);
  auto packed = Run(CartonBin() + " pack " + Q(dir + "/model") + " -o " + Q(dir + "/input.carton"));
  REQUIRE(packed.exit_code == 0);
  // Compressible parts, deflated: shrink and the loader decode them.
  auto tree = ValidCartonFiles();
  for (int i = 0; i < kParts; ++i) {
    tree["model/part" + std::to_string(i) + ".bin"] = Compressible(3 << 20, i + 1);
  }
  for (const auto& [path, content] : tree) {
    fs::create_directories((fs::path(dir) / "model-z" / path).parent_path());
    WriteBytes((fs::path(dir) / "model-z" / path).string(), AsBytes(content));
  }
  packed = Run(CartonBin() + " pack --compression deflate " + Q(dir + "/model-z") + " -o " +
               Q(dir + "/input-z.carton"));
  REQUIRE(packed.exit_code == 0);
  in.compressed_hash = packed.out.substr(0, 64);

  std::mt19937_64 rng(12345);
  for (const Writer& w : Writers(in)) {
    INFO(w.name);
    const std::string out_dir = dir + "/out-" + w.name;
    fs::create_directories(out_dir);
    const std::string dest = w.dest ? w.dest(out_dir) : out_dir + "/dest";
    const std::vector<std::string> env = w.env ? w.env(out_dir) : std::vector<std::string>{};
    auto run = [&] { return Spawn(w.argv(out_dir, dest), env); };
    // Uninterrupted runs give the reference output and the duration (the
    // faster of two, so that the kills land mid-work on a busy machine).
    auto timed = [&] {
      if (w.reset) w.reset(out_dir);
      const auto start = std::chrono::steady_clock::now();
      REQUIRE(Wait(run()) == 0);
      return std::chrono::steady_clock::now() - start;
    };
    auto took = timed();
    const std::string reference = Snapshot(dest);
    if (w.check) w.check(out_dir, dest);
    RemoveDest(dest);
    took = std::min(took, timed());
    CHECK(Snapshot(dest) == reference);
    RemoveDest(dest);

    constexpr int kKills = 12;
    int complete = 0;
    for (int k = 0; k < kKills; ++k) {
      if (w.reset) w.reset(out_dir);
      // Kill points spread over the whole run, a few past its end.
      const auto delay = std::chrono::duration_cast<std::chrono::microseconds>(took) *
                         (static_cast<double>(rng() % 1100) / 1000.0);
      pid_t pid = run();
      std::this_thread::sleep_for(delay);
      ::kill(pid, SIGKILL);
      Wait(pid);
      if (fs::exists(dest)) {
        // The rename happened: the output must be whole.
        CHECK(Snapshot(dest) == reference);
        ++complete;
      }
      // Whatever a killed run leaves is hidden beside the destination and
      // never takes its name.
      const std::string dest_name = fs::path(dest).filename().string();
      for (const auto& e : fs::directory_iterator(fs::path(dest).parent_path())) {
        const std::string name = e.path().filename().string();
        if (name != dest_name) CHECK(name.rfind(w.leftover, 0) == 0);
      }
      if (w.check) w.check(out_dir, dest);
      RemoveDest(dest);
    }
    UNSCOPED_INFO(w.name << ": " << complete << " of " << kKills << " kills came after the rename");
    // A later run is not confused by the leftovers.
    REQUIRE(Wait(run()) == 0);
    CHECK(Snapshot(dest) == reference);
    if (w.check) w.check(out_dir, dest);
    if (w.name == "pack") {
      CHECK(Run(CartonBin() + " verify " + Q(dest)).exit_code == 0);
    }
  }
}

TEST_CASE("crash: a full disk (RLIMIT_FSIZE) gives a clear error and no output",
          "[hostile][disk-full]") {
  TempDir tmp;
  const std::string dir = tmp.path().string();
  MakeModel(dir + "/model", 2, 1 << 20);
  REQUIRE(Run(CartonBin() + " pack " + Q(dir + "/model") + " -o " + Q(dir + "/input.carton"))
              .exit_code == 0);
  fs::create_directories(dir + "/out");
  // The shell ignores SIGXFSZ, so the limit makes writes fail with EFBIG
  // instead of killing the process; `ulimit -f` counts 512-byte blocks.
  const std::string limit = "trap \"\" XFSZ; ulimit -f 1024; exec ";
  auto pack = Run("sh -c " + Q(limit + CartonBin() + " pack " + dir + "/model -o " + dir +
                               "/out/m.carton --compression stored"));
  CHECK(pack.exit_code == 2);
  CHECK_THAT(pack.err, Catch::Contains("carton pack: "));
  CHECK_THAT(pack.err, Catch::Contains("too large"));
  auto unpack = Run("sh -c " + Q(limit + CartonBin() + " unpack " + dir + "/input.carton " + dir +
                                 "/out/unpacked"));
  CHECK(unpack.exit_code == 2);
  CHECK_THAT(unpack.err, Catch::Contains("carton unpack: "));
  CHECK_THAT(unpack.err, Catch::Contains("too large"));
  CHECK(ListTree(dir + "/out").empty());
}

TEST_CASE("crash: a full tmpfs gives a clear error and no output", "[hostile][disk-full]") {
  if (Run("unshare -m true").exit_code != 0) {
    CARTON_SKIP("no private mount namespace here; the RLIMIT_FSIZE test covers a full disk");
  }
  TempDir tmp;
  const std::string dir = tmp.path().string();
  // Many small files: their sizes fit the free space, their pages do not,
  // so unpack passes its free-space check and then meets ENOSPC.
  auto tree = ValidCartonFiles();
  for (int i = 0; i < 300; ++i) tree["model/f" + std::to_string(i)] = Noise(3000, i);
  for (const auto& [path, content] : tree) {
    fs::create_directories((fs::path(dir) / "model" / path).parent_path());
    WriteBytes((fs::path(dir) / "model" / path).string(), AsBytes(content));
  }
  MakeModel(dir + "/big", 1, 2 << 20);
  REQUIRE(Run(CartonBin() + " pack " + Q(dir + "/model") + " -o " + Q(dir + "/small.carton") +
              " --compression stored")
              .exit_code == 0);
  const std::string mnt = dir + "/mnt";
  fs::create_directories(mnt);
  auto in_tmpfs = [&](const std::string& command) {
    return Run("unshare -m sh -c " + Q("mount -t tmpfs -o size=1m tmpfs " + mnt + " || exit 99; " +
                                       command + "; echo \"rc=$?\"; ls -A " + mnt));
  };
  auto pack = in_tmpfs(CartonBin() + " pack " + dir + "/big -o " + mnt + "/m.carton");
  if (pack.exit_code == 99) {
    CARTON_SKIP("tmpfs cannot be mounted here; the RLIMIT_FSIZE test covers a full disk");
  }
  CHECK_THAT(pack.err, Catch::Contains("carton pack: "));
  CHECK_THAT(pack.err, Catch::Contains("No space left on device"));
  CHECK(pack.out == "rc=2\n");
  auto unpack = in_tmpfs(CartonBin() + " unpack " + dir + "/small.carton " + mnt + "/out");
  CHECK_THAT(unpack.err, Catch::Contains("carton unpack: "));
  CHECK_THAT(unpack.err, Catch::Contains("No space left on device"));
  CHECK(unpack.out == "rc=2\n");
  // More than the free space: refused before anything is written.
  REQUIRE(
      Run(CartonBin() + " pack " + Q(dir + "/big") + " -o " + Q(dir + "/big.carton")).exit_code ==
      0);
  auto big = in_tmpfs(CartonBin() + " unpack " + dir + "/big.carton " + mnt + "/out");
  CHECK_THAT(big.err, Catch::Contains("are free there"));
  CHECK(big.out == "rc=2\n");
  CHECK(ListTree(mnt).empty());
}
