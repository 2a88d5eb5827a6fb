// Crash safety and full disks, through the built `carton` binary.
//
// Every command that writes output is killed with SIGKILL at many points
// while it runs: the destination must then hold either nothing or the
// complete output (byte-identical to an uninterrupted run), and a later run
// must succeed despite whatever the killed runs left behind. Adding a
// command (carton shrink, cache materialization, ...) is one more entry in
// Writers().
//
// Then the disk fills up under pack and unpack: first through RLIMIT_FSIZE
// (writes fail with EFBIG; works everywhere), then on a real 1 MiB tmpfs
// when this process may mount one in a private mount namespace.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "carton/common/atomic_file.h"
#include "hostile_testing.h"

extern char** environ;

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// Incompressible bytes, so that deflate keeps the writer busy.
std::string Noise(std::size_t n, std::uint64_t seed) {
  std::string out(n, '\0');
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 56);
  }
  return out;
}

// A model directory of `files` files of `size` bytes each.
void MakeModel(const std::string& dir, int files, std::size_t size) {
  auto tree = ValidCartonFiles();
  for (int i = 0; i < files; ++i) tree["model/part" + std::to_string(i) + ".bin"] = Noise(size, i + 1);
  for (const auto& [path, content] : tree) {
    fs::create_directories((fs::path(dir) / path).parent_path());
    WriteBytes((fs::path(dir) / path).string(), AsBytes(content));
  }
}

// Starts `argv` with stdout and stderr on /dev/null.
pid_t Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return status;
}

// One command that writes output, and how to tell a complete output.
struct Writer {
  std::string name;
  // The command line writing `dest`, given the scratch directory.
  std::function<std::vector<std::string>(const std::string& dir, const std::string& dest)> argv;
};

std::vector<Writer> Writers() {
  return {
      {"pack",
       [](const std::string& dir, const std::string& dest) {
         return std::vector<std::string>{CartonBin(), "pack", dir + "/model", "-o", dest,
                                         "--compression", "deflate", "--level", "1"};
       }},
      {"unpack",
       [](const std::string& dir, const std::string& dest) {
         return std::vector<std::string>{CartonBin(), "unpack", dir + "/input.carton", dest};
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

TEST_CASE("crash: a killed pack or unpack never leaves a partial output", "[hostile][crash]") {
  TempDir tmp;
  const std::string dir = tmp.path().string();
  MakeModel(dir + "/model", 6, 3 << 20);
  auto packed = Run(CartonBin() + " pack " + Q(dir + "/model") + " -o " + Q(dir + "/input.carton"));
  REQUIRE(packed.exit_code == 0);

  std::mt19937_64 rng(12345);
  for (const Writer& w : Writers()) {
    INFO(w.name);
    const std::string out_dir = dir + "/out-" + w.name;
    fs::create_directories(out_dir);
    const std::string dest = out_dir + "/dest";
    // The uninterrupted run gives the reference output and its duration.
    auto start = std::chrono::steady_clock::now();
    REQUIRE(Wait(Spawn(w.argv(dir, dest))) == 0);
    const auto took = std::chrono::steady_clock::now() - start;
    const std::string reference = Snapshot(dest);
    RemoveDest(dest);

    constexpr int kKills = 12;
    int complete = 0;
    for (int k = 0; k < kKills; ++k) {
      // Kill points spread over the whole run, a few past its end.
      const auto delay = std::chrono::duration_cast<std::chrono::microseconds>(took) *
                         (static_cast<double>(rng() % 1100) / 1000.0);
      pid_t pid = Spawn(w.argv(dir, dest));
      std::this_thread::sleep_for(delay);
      ::kill(pid, SIGKILL);
      Wait(pid);
      if (fs::exists(dest)) {
        // The rename happened: the output must be whole.
        CHECK(Snapshot(dest) == reference);
        ++complete;
        RemoveDest(dest);
      }
      // Whatever a killed run leaves is hidden (dot-prefixed) beside the
      // destination and never takes its name.
      for (const auto& e : fs::directory_iterator(out_dir)) {
        const std::string name = e.path().filename().string();
        CHECK(name.rfind(".dest.", 0) == 0);
      }
    }
    UNSCOPED_INFO(w.name << ": " << complete << " of " << kKills << " kills came after the rename");
    // A later run is not confused by the leftovers.
    REQUIRE(Wait(Spawn(w.argv(dir, dest))) == 0);
    CHECK(Snapshot(dest) == reference);
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
  auto unpack = Run("sh -c " + Q(limit + CartonBin() + " unpack " + dir + "/input.carton " +
                                 dir + "/out/unpacked"));
  CHECK(unpack.exit_code == 2);
  CHECK_THAT(unpack.err, Catch::Contains("carton unpack: "));
  CHECK_THAT(unpack.err, Catch::Contains("too large"));
  CHECK(ListTree(dir + "/out").empty());
}

TEST_CASE("crash: a full tmpfs gives a clear error and no output", "[hostile][disk-full]") {
  if (Run("unshare -m true").exit_code != 0) {
    WARN("no private mount namespace here; the RLIMIT_FSIZE test covers a full disk");
    return;
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
    return Run("unshare -m sh -c " +
               Q("mount -t tmpfs -o size=1m tmpfs " + mnt + " || exit 99; " + command +
                 "; echo \"rc=$?\"; ls -A " + mnt));
  };
  auto pack = in_tmpfs(CartonBin() + " pack " + dir + "/big -o " + mnt + "/m.carton");
  if (pack.exit_code == 99) {
    WARN("tmpfs cannot be mounted here; the RLIMIT_FSIZE test covers a full disk");
    return;
  }
  CHECK_THAT(pack.err, Catch::Contains("carton pack: "));
  CHECK_THAT(pack.err, Catch::Contains("No space left on device"));
  CHECK(pack.out == "rc=2\n");
  auto unpack = in_tmpfs(CartonBin() + " unpack " + dir + "/small.carton " + mnt + "/out");
  CHECK_THAT(unpack.err, Catch::Contains("carton unpack: "));
  CHECK_THAT(unpack.err, Catch::Contains("No space left on device"));
  CHECK(unpack.out == "rc=2\n");
  // More than the free space: refused before anything is written.
  REQUIRE(Run(CartonBin() + " pack " + Q(dir + "/big") + " -o " + Q(dir + "/big.carton"))
              .exit_code == 0);
  auto big = in_tmpfs(CartonBin() + " unpack " + dir + "/big.carton " + mnt + "/out");
  CHECK_THAT(big.err, Catch::Contains("are free there"));
  CHECK(big.out == "rc=2\n");
  CHECK(ListTree(mnt).empty());
}
