// The cache against real processes that run beside it or die in it,
// through the built `carton` binary ($CARTON_BIN): `carton cache gc` in a
// loop beside pulls and loads from a registry (Debian's docker-registry on
// 127.0.0.1), `carton load oci://...` killed with SIGKILL at several
// moments, and `carton cache gc` interrupted with SIGINT while it deletes
// an entry of thousands of files (loader/FORMAT.md "Cache", "Removal").
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "carton/loader/loader.h"
#include "loader/loader_testing.h"
#include "registry_testing.h"

extern char** environ;

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

using carton::testing::Noise;
using carton::testing::Spawn;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

const char kConfig[] =
    "spec_version = 1\nmodel_name = \"race\"\n"
    "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \"=1.0.0\"\n"
    "runner_compat_version = 1\n";

// A model directory: carton.toml and model/part<i>.bin, one file of
// noise per size in `sizes`. Returns `dir`.
std::string MakeNoiseModel(const std::string& dir, const std::vector<std::size_t>& sizes) {
  fs::create_directories(dir + "/model");
  WriteBytes(dir + "/carton.toml", AsBytes(kConfig));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    WriteBytes(dir + "/model/part" + std::to_string(i) + ".bin", AsBytes(Noise(sizes[i], i + 1)));
  }
  return dir;
}

int WaitStatus(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

// Whether the process has ended (and then its status, reaped).
bool Ended(pid_t pid, int* status) { return ::waitpid(pid, status, WNOHANG) == pid; }

// Polls every millisecond until `ready` is true or the process ends (then
// false, its status in `status`), for at most 60 seconds.
bool WaitFor(pid_t pid, const std::function<bool()>& ready, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    if (Ended(pid, status)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ready();
}

// Names in `dir` (none when it is missing).
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.push_back(it->path().filename().string());
  return out;
}

bool AnyName(const std::string& dir, const std::function<bool(const std::string&)>& match) {
  for (const auto& name : Names(dir)) {
    if (match(name)) return true;
  }
  return false;
}

std::string Env(const std::string& cache) { return "CARTON_CACHE_DIR=" + cache; }

// The carton binary on a cache, with no credentials (HOME is `home`).
std::string Cli(const std::string& cache, const std::string& home) {
  return "CARTON_CACHE_DIR=" + Q(cache) + " HOME=" + Q(home) + " " + CartonBin();
}

// Packs `dir` and pushes it to `ref`. Returns the manifest hash.
std::string PackAndPush(const std::string& dir, const std::string& carton, const std::string& ref,
                        const std::string& home) {
  const std::string hash = PackDir(dir, carton);
  auto pushed = Run(Cli(home + "/push-cache", home) + " push " + Q(carton) + " " + ref);
  INFO(pushed.err);
  REQUIRE(pushed.exit_code == 0);
  return hash;
}

// What a killed command may leave in the cache: files in downloads/,
// temporary and trash directories in cartons/, and temporary or partial
// files in blobs/sha256/ (a partial's validator goes with it).
std::vector<std::string> Leftovers(const std::string& cache) {
  std::vector<std::string> out;
  for (const auto& name : Names(cache + "/downloads")) {
    if (!name.ends_with(".partial-validator")) out.push_back(cache + "/downloads/" + name);
  }
  for (const auto& name : Names(cache + "/cartons")) {
    if (name.starts_with(".")) out.push_back(cache + "/cartons/" + name);
  }
  for (const auto& name : Names(cache + "/blobs/sha256")) {
    if (name.size() != 64 && !name.ends_with(".partial-validator")) {
      out.push_back(cache + "/blobs/sha256/" + name);
    }
  }
  return out;
}

// The paths `carton cache list --json` reports as temporaries or partial
// downloads.
std::set<std::string> Listed(const std::string& cache, const std::string& home) {
  auto r = Run(Cli(cache, home) + " cache list --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> out;
  for (const char* key : {"temporaries", "partial_downloads"}) {
    if (!j.contains(key)) continue;
    for (const auto& t : j[key]) out.insert(t["path"].get<std::string>());
  }
  return out;
}

}  // namespace

TEST_CASE("loader cache: gc in a loop removes no blob that pulls and loads from a registry use",
          "[loader][cache][gc][oci]") {
  TempDir tmp;
  RegistryServer registry;
  const std::string home = tmp.path().string();
  // Blobs fetched before the carton is written, and one written into it
  // as it downloads (8 MiB and more).
  std::vector<std::size_t> sizes(8, 700'000);
  sizes.push_back(9'000'000);
  const std::string ref = registry.Ref("race/model:v1");
  PackAndPush(MakeNoiseModel(tmp.file("m"), sizes), tmp.file("m.carton"), ref, home);

  const std::string cache = tmp.file("cache");
  const std::string stop = tmp.file("stop");
  const pid_t gc = Spawn(
      {"/bin/sh", "-c",
       "while [ ! -e " + Q(stop) + " ]; do " + CartonBin() +
           " cache gc --max-size 0 >/dev/null 2>&1; echo >> " + Q(tmp.file("gc-runs")) + "; done"},
      {Env(cache), "HOME=" + home});
  constexpr int kRuns = 10;
  int failed_pulls = 0, failed_loads = 0, bad_cartons = 0;
  for (int i = 0; i < kRuns; ++i) {
    const std::string out = tmp.file("pulled-" + std::to_string(i) + ".carton");
    auto pull = Run(Cli(cache, home) + " pull " + ref + " -o " + Q(out));
    if (pull.exit_code != 0) {
      WARN("pull " << i << ": exit " << pull.exit_code << ": " << pull.err);
      ++failed_pulls;
    } else if (Run(CartonBin() + " verify " + Q(out)).exit_code != 0) {
      ++bad_cartons;
    }
    auto load = Run(Cli(cache, home) + " load " + ref);
    if (load.exit_code != 0) {
      WARN("load " << i << ": exit " << load.exit_code << ": " << load.err);
      ++failed_loads;
    }
  }
  WriteBytes(stop, AsBytes(""));
  WaitStatus(gc);
  CHECK(ReadText(tmp.file("gc-runs")).size() >= 2);  // gc ran meanwhile
  CHECK(failed_pulls == 0);
  CHECK(failed_loads == 0);
  CHECK(bad_cartons == 0);
}

TEST_CASE(
    "loader cache: a load from a registry killed at any moment leaves nothing gc or the "
    "next load keeps",
    "[loader][cache][oci][crash]") {
  TempDir tmp;
  RegistryServer registry;
  const std::string home = tmp.path().string();
  const std::string ref = registry.Ref("killed/model:v1");
  const std::string hash =
      PackAndPush(MakeNoiseModel(tmp.file("m"), {12'000'000, 12'000'000, 12'000'000, 12'000'000}),
                  tmp.file("m.carton"), ref, home);
  // When to kill: while a blob downloads into the blob cache, while the
  // carton is rebuilt in downloads/ (early, and once it has grown), while
  // the entry is made; each once followed by gc and once by another load,
  // and up to 8 ms after the moment is seen.
  const std::vector<std::function<bool(const std::string&)>> moments = {
      [](const std::string& cache) {
        return AnyName(cache + "/blobs/sha256", [](const auto& n) { return n[0] == '.'; });
      },
      [](const std::string& cache) {
        return AnyName(cache + "/downloads",
                       [](const auto& n) { return n.find(".pull-") != std::string::npos; });
      },
      [](const std::string& cache) {
        for (const auto& n : Names(cache + "/downloads")) {
          std::error_code ec;
          if (n.find(".pull-") != std::string::npos &&
              fs::file_size(cache + "/downloads/" + n, ec) > 20'000'000 && !ec) {
            return true;
          }
        }
        return false;
      },
      [](const std::string& cache) {
        return AnyName(cache + "/cartons", [](const auto& n) { return n.starts_with(".tmp-"); });
      }};
  int killed_with_leftovers = 0;
  const auto when = [&](int round, const std::string& cache) { return moments[round / 2](cache); };
  for (int round = 0; round < 2 * static_cast<int>(moments.size()); ++round) {
    INFO("round " << round);
    const std::string cache = tmp.file("cache-" + std::to_string(round));
    const pid_t load = Spawn({CartonBin(), "load", ref}, {Env(cache), "HOME=" + home});
    int status = 0;
    if (WaitFor(
            load, [&] { return when(round, cache); }, &status)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(round % 3 * 4));
      ::kill(load, SIGKILL);
      status = WaitStatus(load);
    }
    const std::vector<std::string> left = Leftovers(cache);
    if (!left.empty()) ++killed_with_leftovers;
    // Everything left is listed (cache list counts it).
    const std::set<std::string> listed = Listed(cache, home);
    for (const auto& path : left) {
      INFO(path);
      CHECK(listed.count(path) == 1);
    }
    if (round % 2 == 0) {
      // gc leaves nothing: no process holds anything.
      auto gc = Run(Cli(cache, home) + " cache gc --max-size 1");
      CHECK(gc.exit_code == 0);
      CHECK(Leftovers(cache).empty());
      CHECK(Names(cache + "/cartons").empty());
      CHECK(Names(cache + "/blobs/sha256").empty());
    } else {
      // The next load of the same carton leaves no temporary of its hash.
      auto again = Run(Cli(cache, home) + " load " + ref);
      INFO(again.err);
      CHECK(again.exit_code == 0);
      CHECK(Names(cache + "/downloads").empty());
      CHECK(Names(cache + "/cartons") == std::vector<std::string>{hash});
    }
  }
  CHECK(killed_with_leftovers >= 1);
}

TEST_CASE("loader cache: Ctrl-C during gc leaves no trash directory",
          "[loader][cache][interrupt]") {
  TempDir tmp;
  const std::string cache = tmp.file("cache");
  ScopedEnv env("CARTON_CACHE_DIR", cache);
  const std::string dir = tmp.file("m");
  fs::create_directories(dir + "/model");
  WriteBytes(dir + "/carton.toml", AsBytes(kConfig));
  for (int i = 0; i < 3000; ++i) {
    WriteBytes(dir + "/model/f" + std::to_string(i) + ".txt",
               AsBytes("file " + std::to_string(i) + "\n"));
  }
  PackDir(dir, tmp.file("m.carton"));
  int interrupted = 0;
  for (int round = 0; round < 6; ++round) {
    INFO("round " << round);
    REQUIRE(testing::LoadAt(tmp.file("m.carton")).ok());
    const pid_t gc = Spawn({CartonBin(), "cache", "gc", "--max-size", "0"}, {Env(cache)});
    int status = 0;
    const auto trash = [&] {
      return AnyName(cache + "/cartons", [](const auto& n) { return n.starts_with(".trash-"); });
    };
    if (WaitFor(gc, trash, &status)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(round * 2));
      ::kill(gc, SIGINT);
      status = WaitStatus(gc);
    }
    INFO("status " << status);
    CHECK(WIFEXITED(status));
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    CHECK((code == 130 || code == 0));
    if (code == 130) ++interrupted;
    CHECK_FALSE(trash());
  }
  CHECK(interrupted >= 1);
}
