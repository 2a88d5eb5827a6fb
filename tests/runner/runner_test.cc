// Runners as real processes: selection, the serve protocol, self-tests that
// pass and fail, crashes and hangs, `carton infer`.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "carton/loader/loader.h"
#include "carton/runner/client.h"
#include "carton/runner/select.h"
#include "carton/runner/self_test.h"
#include "carton/runner/tensor_file.h"
#include "carton/safetensors/writer.h"
#include "loader/loader_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

// A packed test carton with its own cache, and a runner directory.
struct Fixture {
  TempDir tmp;
  std::string carton;
  std::string runners;
  Fixture() {
    carton = tmp.file("m.carton");
    PackDir(MakeModelDir(tmp.file("m")), carton);
    runners = tmp.file("runners");
    fs::create_directories(runners);
  }
  // Runs the CLI with this fixture's cache and runner path.
  CommandResult Cli(const std::string& args, const std::string& runner_path = "") const {
    return Run("CARTON_CACHE_DIR='" + tmp.file("cache") + "' CARTON_RUNNER_PATH='" +
               (runner_path.empty() ? runners : runner_path) + "' " + CartonBin() + " " + args);
  }
};

RunnerInfo Wanted(const std::string& req = ">=1.0.0, <2", std::uint64_t compat = 1) {
  RunnerInfo r;
  r.runner_name = "noop";
  r.required_framework_version = req;
  r.runner_compat_version = compat;
  return r;
}

}  // namespace

TEST_CASE("runner: the search path's odd entries are skipped, never thrown from",
          "[runner][errors]") {
  Fixture f;
  // A missing directory, a file where a directory should be, a directory
  // and a dangling symlink named like runners, and one real runner.
  const std::string odd = f.tmp.file("odd");
  fs::create_directories(odd + "/carton-runner-dir");
  fs::create_symlink(odd + "/nowhere", odd + "/carton-runner-dangling");
  std::ofstream(f.tmp.file("a-file")) << "x";
  ScopedEnv path("CARTON_RUNNER_PATH", f.tmp.file("missing") + ":" + f.tmp.file("a-file") + ":" +
                                           odd + ":" + NoopRunnerDir());
  const auto found = runner::FindRunners();
  REQUIRE(found.size() == 1);
  CHECK(found[0].path == NoopRunnerDir() + "/carton-runner-noop");
}

TEST_CASE("runner: selection by name, framework version and compat version", "[runner]") {
  Fixture f;
  ScopedEnv path("CARTON_RUNNER_PATH", f.runners);
  SECTION("no runner at all lists the directories searched") {
    auto r = runner::SelectRunner(Wanted());
    REQUIRE(r.status().code() == StatusCode::kNotFound);
    CHECK_THAT(r.status().message(),
               Catch::Contains("no carton-runner-* executables in " + f.runners));
  }
  SECTION("each candidate is rejected with its reason") {
    WriteFakeRunner(f.runners, "other", "FAKE_RUNNER_NAME=other");
    WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_VERSION=2.1.0");
    WriteFakeRunner(f.runners, "noop-compat", "FAKE_RUNNER_COMPAT=7");
    WriteFakeRunner(f.runners, "broken", "FAKE_RUNNER_MODE=bad-info");
    auto r = runner::SelectRunner(Wanted());
    REQUIRE(r.status().code() == StatusCode::kNotFound);
    const std::string& m = r.status().message();
    CHECK_THAT(m, Catch::Contains("no runner for \"noop\" (framework >=1.0.0, <2, compat 1)"));
    CHECK_THAT(m, Catch::Contains("carton-runner-other: runner name \"other\", not \"noop\""));
    CHECK_THAT(m, Catch::Contains(
                      "carton-runner-noop: framework version 2.1.0 does not satisfy >=1.0.0, <2"));
    CHECK_THAT(m, Catch::Contains("carton-runner-noop-compat: runner_compat_version 7, not 1"));
    CHECK_THAT(m,
               Catch::Contains("carton-runner-broken: `info` printed no valid runner description"));
    // The same through the CLI: exit 2, the list on stderr.
    auto cli = f.Cli("self-test '" + f.carton + "'");
    CHECK(cli.exit_code == 2);
    CHECK_THAT(cli.err, Catch::Contains("runner_compat_version 7, not 1"));
  }
  SECTION("the matching one is picked") {
    WriteFakeRunner(f.runners, "a-old", "FAKE_RUNNER_VERSION=0.9.0");
    auto r = runner::SelectRunner(Wanted(), std::chrono::seconds(10));
    CHECK_FALSE(r.ok());
    ScopedEnv both("CARTON_RUNNER_PATH", f.runners + ":" + NoopRunnerDir());
    auto ok = runner::SelectRunner(Wanted());
    REQUIRE(ok.ok());
    CHECK(ok->path == NoopRunnerDir() + "/carton-runner-noop");
    CHECK(ok->framework_version == "1.0.0");
  }
}

TEST_CASE("runner: carton self-test passes on the noop runner", "[runner][self-test]") {
  Fixture f;
  auto r = f.Cli("self-test '" + f.carton + "'", NoopRunnerDir());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("PASS echo"));
  CHECK_THAT(r.out, Catch::Contains("ok   x: all 4 elements match"));
  CHECK_THAT(r.out, Catch::Contains("ok   labels: all 2 strings match"));
  CHECK_THAT(r.out, Catch::Contains("1 of 1 self-tests passed"));
  auto j = f.Cli("self-test --json '" + f.carton + "'", NoopRunnerDir());
  REQUIRE(j.exit_code == 0);
  auto report = nlohmann::json::parse(j.out);
  CHECK(report["passed"] == true);
  CHECK(report["tests"][0]["outputs"].size() == 2);
  // The runner's own self-test command runs it in-process.
  auto own = Run("CARTON_CACHE_DIR='" + f.tmp.file("cache") + "' " + NoopRunnerDir() +
                 "/carton-runner-noop self-test '" + f.carton + "'");
  CHECK(own.exit_code == 0);
  CHECK_THAT(own.out, Catch::Contains("PASS echo"));
}

TEST_CASE("runner: self-tests fail on wrong values, shapes, dtypes and missing outputs",
          "[runner][self-test]") {
  Fixture f;
  struct Case {
    const char* mode;
    const char* message;
  } cases[] = {
      {"wrong-value", "FAIL x: 1 of 4 elements differ; worst at [0]: 2.5 vs expected 1.5"},
      {"wrong-shape", "FAIL x: shape [2, 2] vs expected [4]"},
      {"wrong-dtype", "FAIL x: dtype int32 vs expected float32"},
      {"missing-output", "FAIL x: missing from the runner's outputs"},
  };
  for (const auto& c : cases) {
    fs::remove_all(f.runners);
    WriteFakeRunner(f.runners, "noop", std::string("FAKE_RUNNER_MODE=") + c.mode);
    auto r = f.Cli("self-test '" + f.carton + "'");
    INFO(c.mode << "\n" << r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL echo"));
    CHECK_THAT(r.out, Catch::Contains(c.message));
    CHECK_THAT(r.out, Catch::Contains("0 of 1 self-tests passed"));
  }
  // A tolerance wide enough makes the wrong value pass.
  fs::remove_all(f.runners);
  WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_MODE=wrong-value");
  auto loose = f.Cli("self-test --atol 1.5 '" + f.carton + "'");
  CHECK(loose.exit_code == 0);
}

TEST_CASE("runner: a runner that crashes, hangs or fails to load gives a clear error",
          "[runner][self-test]") {
  Fixture f;
  SECTION("crash") {
    WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_MODE=crash");
    auto r = f.Cli("self-test '" + f.carton + "'");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("carton-runner-noop exited with signal 6"));
    CHECK_THAT(r.err, Catch::Contains("while inferring"));
    // With --json: one document on stdout, the report with the crash as
    // its error.
    auto j = f.Cli("self-test --json '" + f.carton + "'");
    CHECK(j.exit_code == 2);
    REQUIRE(std::count(j.out.begin(), j.out.end(), '\n') == 1);
    auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["ok"] == false);
    CHECK(doc["error"]["code"] == "internal");
    CHECK_THAT(doc["error"]["message"].get<std::string>(), Catch::Contains("exited with signal 6"));
    CHECK(doc["tests"].size() == 1);
  }
  SECTION("hang") {
    WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_MODE=hang");
    auto start = std::chrono::steady_clock::now();
    auto r = f.Cli("self-test --timeout 0.5 '" + f.carton + "'");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("did not answer while inferring within 0.5"));
    CHECK_THAT(r.err, Catch::Contains("killed"));
  }
  SECTION("load failure keeps the runner's code and message") {
    WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_MODE=fail-load");
    auto r = f.Cli("self-test '" + f.carton + "'");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("cannot parse the model"));
  }
}

TEST_CASE("runner: serve mode round trips numbers and strings through shared memory",
          "[runner][serve]") {
  Fixture f;
  ScopedEnv cache("CARTON_CACHE_DIR", f.tmp.file("cache"));
  auto loaded = testing::LoadAt(f.carton);
  REQUIRE(loaded.ok());
  auto p =
      runner::RunnerProcess::Start(NoopRunnerDir() + "/carton-runner-noop", loaded->root_dir());
  REQUIRE(p.ok());
  std::vector<std::byte> big(4 << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 7);
  std::vector<loader::Tensor> in = {
      loader::Tensor::View("x", DataType::kFloat32, {1 << 20}, big),
      loader::Tensor::Strings("labels", {2, 1}, {"a", std::string("b\0c", 3)}),
      loader::Tensor::View("empty", DataType::kInt64, {0, 3}, {}),
  };
  for (int round = 0; round < 3; ++round) {
    auto out = p->Infer(in);
    REQUIRE(out.ok());
    REQUIRE(out->size() == 3);
    CHECK((*out)[0].name == "x");
    CHECK((*out)[0].shape == std::vector<std::uint64_t>{1 << 20});
    CHECK(std::memcmp((*out)[0].data.data(), big.data(), big.size()) == 0);
    CHECK((*out)[0].data.data() != big.data());
    CHECK((*out)[1].strings == in[1].strings);
    CHECK((*out)[1].shape == std::vector<std::uint64_t>{2, 1});
    CHECK((*out)[2].shape == std::vector<std::uint64_t>{0, 3});
  }
  // An inconsistent tensor is refused before anything is sent.
  auto bad = p->Infer({loader::Tensor::View("x", DataType::kFloat32, {3}, big)});
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(p->Close().ok());
}

namespace {

// How many of the runner's output arenas this process has mapped (each is
// one mapping of a memfd named carton-outputs).
int MappedOutputArenas() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:carton-outputs") != std::string::npos) ++n;
  }
  return n;
}

// A 4 MiB float32 tensor "x" filled from `seed`, and its bytes.
struct Pattern {
  std::vector<std::byte> bytes;
  explicit Pattern(int seed) : bytes(4 << 20) {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + seed);
  }
  std::vector<loader::Tensor> Inputs() const {
    return {loader::Tensor::View("x", DataType::kFloat32, {1 << 20}, bytes)};
  }
  bool Matches(const std::vector<loader::Tensor>& out) const {
    return out.size() == 1 && out[0].data.size() == bytes.size() &&
           std::memcmp(out[0].data.data(), bytes.data(), bytes.size()) == 0;
  }
};

}  // namespace

TEST_CASE("runner: outputs stay valid while held, and dropped ones free their arena",
          "[runner][serve]") {
  Fixture f;
  ScopedEnv cache("CARTON_CACHE_DIR", f.tmp.file("cache"));
  auto loaded = testing::LoadAt(f.carton);
  REQUIRE(loaded.ok());
  const int before = MappedOutputArenas();
  auto p =
      runner::RunnerProcess::Start(NoopRunnerDir() + "/carton-runner-noop", loaded->root_dir());
  REQUIRE(p.ok());
  const Pattern a(1), b(2), c(3);

  auto first = p->Infer(a.Inputs());
  auto second = p->Infer(b.Inputs());
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  // Both held: two arenas, each output as it came.
  CHECK(MappedOutputArenas() - before == 2);
  CHECK(a.Matches(*first));
  CHECK(b.Matches(*second));
  CHECK((*first)[0].data.data() != (*second)[0].data.data());

  // The usual loop: each call's outputs replace the previous ones, which
  // frees their arena for the call after; no further arena is made.
  first = Result<std::vector<loader::Tensor>>(std::vector<loader::Tensor>{});
  for (int i = 0; i < 10; ++i) {
    second = p->Infer((i % 2 ? a : c).Inputs());
    REQUIRE(second.ok());
    CHECK((i % 2 ? a : c).Matches(*second));
  }
  CHECK(MappedOutputArenas() - before == 2);

  SECTION("a copy of one output tensor keeps its arena reserved") {
    loader::Tensor kept = (*second)[0];  // the loop's last call: pattern a
    second = p->Infer(a.Inputs());
    REQUIRE(second.ok());
    auto third = p->Infer(b.Inputs());
    REQUIRE(third.ok());
    CHECK(MappedOutputArenas() - before == 3);
    CHECK(std::memcmp(kept.data.data(), a.bytes.data(), a.bytes.size()) == 0);  // the last call's
    CHECK(b.Matches(*third));
  }

  SECTION("past 8 held arenas, each call gets a one-off arena, freed with its outputs") {
    second = Result<std::vector<loader::Tensor>>(std::vector<loader::Tensor>{});
    std::vector<std::vector<loader::Tensor>> held;
    std::vector<int> seeds;
    for (int i = 0; i < 11; ++i) {
      const Pattern pattern(10 + i);
      auto out = p->Infer(pattern.Inputs());
      REQUIRE(out.ok());
      held.push_back(std::move(out).value());
      seeds.push_back(10 + i);
    }
    // 8 kept arenas and 3 one-offs, all mapped; every output intact.
    CHECK(MappedOutputArenas() - before == 11);
    for (std::size_t i = 0; i < held.size(); ++i) {
      INFO("call " << i);
      CHECK(Pattern(seeds[i]).Matches(held[i]));
    }
    // The one-offs' memory goes with their outputs; the kept arenas stay.
    held.resize(8);
    CHECK(MappedOutputArenas() - before == 8);
    held.clear();
    for (int i = 0; i < 5; ++i) {
      second = p->Infer(a.Inputs());
      REQUIRE(second.ok());
      CHECK(a.Matches(*second));
    }
    CHECK(MappedOutputArenas() - before == 8);
  }
  CHECK(p->Close().ok());
}

TEST_CASE("runner: outputs outlive a runner that crashes in a later call", "[runner][serve]") {
  Fixture f;
  ScopedEnv cache("CARTON_CACHE_DIR", f.tmp.file("cache"));
  WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_CRASH_AT=2");
  auto loaded = testing::LoadAt(f.carton);
  REQUIRE(loaded.ok());
  runner::RunnerProcessOptions quiet;
  quiet.on_stderr_line = [](std::string_view) {};
  auto p =
      runner::RunnerProcess::Start(f.runners + "/carton-runner-noop", loaded->root_dir(), quiet);
  REQUIRE(p.ok());
  const Pattern a(1);
  auto first = p->Infer(a.Inputs());
  REQUIRE(first.ok());
  auto crashed = p->Infer(a.Inputs());
  REQUIRE_FALSE(crashed.ok());
  CHECK(crashed.status().code() == StatusCode::kInternal);
  CHECK_THAT(crashed.status().message(),
             Catch::Contains("carton-runner-noop exited with signal 6"));
  CHECK_THAT(crashed.status().message(), Catch::Contains("while inferring"));
  CHECK(p->Infer(a.Inputs()).status().code() == StatusCode::kInternal);
  // The runner is gone; what it returned before is still mapped here.
  CHECK(a.Matches(*first));
}

TEST_CASE("runner: carton infer reads and writes safetensors files", "[runner][infer]") {
  Fixture f;
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<std::byte> xb(16);
  std::memcpy(xb.data(), x.data(), 16);
  REQUIRE(runner::WriteTensorsFile(f.tmp.file("in.safetensors"),
                                   {loader::Tensor::View("t", DataType::kFloat32, {4}, xb),
                                    loader::Tensor::Strings("s", {2}, {"hello", "world"})})
              .ok());
  const std::string in = f.tmp.file("in.safetensors");
  auto r = f.Cli("infer '" + f.carton + "' --input x=" + in + ":t" + " --input labels=" + in +
                     ":s --output " + f.tmp.file("out.safetensors"),
                 NoopRunnerDir());
  REQUIRE(r.exit_code == 0);
  // One line per output on stderr; stdout stays empty.
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("output x: float32 [4]"));
  CHECK_THAT(r.err, Catch::Contains("output labels: string [2]"));
  auto quiet = f.Cli("infer -q '" + f.carton + "' --input x=" + in + ":t" +
                         " --input labels=" + in + ":s --output " + f.tmp.file("q.safetensors"),
                     NoopRunnerDir());
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  auto out = runner::ReadTensorsFile(f.tmp.file("out.safetensors"));
  REQUIRE(out.ok());
  REQUIRE(out->size() == 2);
  CHECK((*out)[0].name == "x");
  CHECK(std::memcmp((*out)[0].data.data(), xb.data(), 16) == 0);
  CHECK((*out)[1].strings == std::vector<std::string>{"hello", "world"});

  auto json = f.Cli("infer --json '" + f.carton + "' --input x=" + in + ":t" +
                        " --input labels=" + in + ":s --output " + f.tmp.file("o3.safetensors"),
                    NoopRunnerDir());
  REQUIRE(json.exit_code == 0);
  auto j = nlohmann::json::parse(json.out);
  CHECK(j["schema"] == 1);
  CHECK(j["ok"] == true);
  CHECK(j["model"] == f.carton);
  CHECK(j["outputs"][0] == nlohmann::json({{"name", "x"}, {"dtype", "float32"}, {"shape", {4}}}));

  auto missing = f.Cli("infer '" + f.carton + "' --input x=" + f.tmp.file("nope.safetensors") +
                           " --output " + f.tmp.file("o2.safetensors"),
                       NoopRunnerDir());
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("nope.safetensors"));
  CHECK_FALSE(fs::exists(f.tmp.file("o2.safetensors")));
}

TEST_CASE("runner: carton infer checks inputs against [[input]] before starting a runner",
          "[runner][infer]") {
  Fixture f;
  std::vector<std::byte> three(12), four(16);
  REQUIRE(runner::WriteTensorsFile(f.tmp.file("in.safetensors"),
                                   {loader::Tensor::View("short", DataType::kFloat32, {3}, three),
                                    loader::Tensor::View("x", DataType::kFloat32, {4}, four),
                                    loader::Tensor::View("i", DataType::kInt32, {4}, four),
                                    loader::Tensor::Strings("s", {2}, {"a", "b"})})
              .ok());
  const std::string in = f.tmp.file("in.safetensors");
  // An empty runner path: a check that passed would fail on finding no
  // runner (exit 2), so exit 1 and the message show the check ran first.
  auto infer = [&](const std::string& inputs) {
    return f.Cli("infer '" + f.carton + "' " + inputs + " --output " + f.tmp.file("o.safetensors"));
  };
  auto r = infer("--input x=" + in + ":short --input labels=" + in + ":s");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("input \"x\": shape [3]: dimension 0 is 3, not 4"));
  CHECK_THAT(r.err, Catch::Contains("declared inputs: x float32, labels string"));
  r = infer("--input x=" + in + ":i --input labels=" + in + ":s");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("input \"x\": dtype int32, not float32"));
  r = infer("--input x=" + in + ":x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("input \"labels\": missing"));
  r = infer("--input x=" + in + ":x --input labels=" + in + ":s --input extra=" + in + ":x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("\"extra\" is not one of the carton's declared inputs"));
  // A tensor name the file lacks: the names it has.
  r = infer("--input x=" + in + ":nope");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("no tensor named \"nope\" (it has: short, x, i, s)"));
  CHECK_FALSE(fs::exists(f.tmp.file("o.safetensors")));
  // With --json the error is a document on stdout too.
  r = f.Cli("infer --json '" + f.carton + "' --input x=" + in + ":x --output " +
            f.tmp.file("o.safetensors"));
  CHECK(r.exit_code == 1);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == 1);
  CHECK(j["error"]["code"] == "invalid_argument");
}

TEST_CASE("runner: an out-of-tree runner builds against the installed package",
          "[runner][install]") {
  TempDir tmp;
  std::string build_dir = fs::path(CARTON_DEFAULT_BIN).parent_path().parent_path().string();
  std::string prefix = tmp.file("prefix");
  auto install = Run("cmake --install '" + build_dir + "' --prefix '" + prefix + "'");
  REQUIRE(install.exit_code == 0);
  CHECK(fs::exists(prefix + "/lib/cmake/carton/cartonConfig.cmake"));
  CHECK(fs::exists(prefix + "/libexec/carton/runners/carton-runner-noop"));
  auto pc = Run("PKG_CONFIG_PATH='" + prefix + "/lib/pkgconfig' pkg-config --cflags --libs carton");
  CHECK(pc.exit_code == 0);
  CHECK_THAT(pc.out, Catch::Contains("-lcarton_runner"));

  std::string src = std::string(CARTON_SOURCE_DIR) + "/examples/runner";
  auto configure = Run("cmake -S '" + src + "' -B '" + tmp.file("b") + "' -DCMAKE_PREFIX_PATH='" +
                       prefix + "' -DCMAKE_BUILD_TYPE=Release");
  INFO(configure.out << configure.err);
  REQUIRE(configure.exit_code == 0);
  auto build = Run("cmake --build '" + tmp.file("b") + "'");
  INFO(build.out << build.err);
  REQUIRE(build.exit_code == 0);
  auto info = Run("'" + tmp.file("b") + "/carton-runner-example' info");
  CHECK(info.exit_code == 0);
  auto j = nlohmann::json::parse(info.out);
  CHECK(j["runner_name"] == "example");
  // And the installed CLI finds the installed noop runner beside itself.
  auto runners = Run("env -u CARTON_RUNNER_PATH '" + prefix + "/bin/carton' runners");
  CHECK_THAT(runners.out, Catch::Contains(prefix + "/libexec/carton/runners/carton-runner-noop"));
}

TEST_CASE("runner: malformed string tensors and order metadata are refused", "[runner][corrupt]") {
  TempDir tmp;
  std::vector<std::byte> bytes(20, std::byte{1});
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  } cases[] = {
      {"carton.string:s", "[3]", "does not hold 3 length-prefixed strings"},
      {"carton.string:s", "[18446744073709551615, 2]", "string shape too large"},
      {"carton.string:s", "[-1]", "bad string shape"},
      {"carton.string:s", "nonsense", "bad string shape"},
      {"carton.order", "[\"s\", \"t\"]", "lists 2 tensors, the file has 1"},
      {"carton.order", "[1]", "bad carton.order metadata"},
  };
  for (const auto& c : cases) {
    std::string path = tmp.file("bad.safetensors");
    std::vector<safetensors::TensorSource> src = {{"s", safetensors::Dtype::kU8, {20}, bytes, {}}};
    REQUIRE(safetensors::WriteFile(path, src, {{c.key, c.value}}).ok());
    auto r = runner::ReadTensorsFile(path);
    INFO(c.key << " = " << c.value);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(r.status().message(), Catch::Contains(c.message));
  }
}

TEST_CASE("runner: the runner's stderr reaches the caller's stderr line by line, named",
          "[runner][stderr]") {
  Fixture f;
  WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_STDERR=1");
  auto r = f.Cli("self-test '" + f.carton + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[noop] loading the model\n[noop] inferring 1\n"));
  CHECK_THAT(r.out, Catch::Contains("1 of 1 self-tests passed"));
  CHECK(r.out.find("[noop]") == std::string::npos);

  // A crash: the lines came as they were written, and the error quotes
  // the end of the runner's stderr.
  fs::remove_all(f.runners);
  WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_STDERR=1 FAKE_RUNNER_MODE=crash");
  auto crash = f.Cli("self-test '" + f.carton + "'");
  CHECK(crash.exit_code == 2);
  CHECK_THAT(crash.err, Catch::Contains("[noop] inferring 1\n"));
  CHECK_THAT(crash.err, Catch::Contains("exited with signal 6"));
  CHECK_THAT(crash.err, Catch::Contains("its stderr: loading the model\ninferring 1"));
}

TEST_CASE("runner: what a serving runner prints on stdout goes to the caller's stderr",
          "[runner][stderr]") {
  // `carton self-test --json` writes the report on stdout: a runner's own
  // output must not land in it.
  Fixture f;
  WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_STDOUT=1");
  auto r = f.Cli("self-test --json '" + f.carton + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[noop] printed on stdout\n"));
  CHECK(r.out.find("printed on stdout") == std::string::npos);
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
}

TEST_CASE("runner: stderr lines arrive while the runner is still working", "[runner][stderr]") {
  Fixture f;
  ScopedEnv cache("CARTON_CACHE_DIR", f.tmp.file("cache"));
  WriteFakeRunner(f.runners, "noop", "FAKE_RUNNER_STDERR=1 FAKE_RUNNER_MODE=hang");
  auto loaded = testing::LoadAt(f.carton);
  REQUIRE(loaded.ok());
  std::mutex mu;
  std::vector<std::string> lines;
  runner::RunnerProcessOptions options;
  options.infer_timeout = std::chrono::seconds(3);
  options.on_stderr_line = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  };
  auto p =
      runner::RunnerProcess::Start(f.runners + "/carton-runner-noop", loaded->root_dir(), options);
  REQUIRE(p.ok());
  auto has = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  auto infer =
      std::async(std::launch::async, [&] { return p->Infer(loaded->self_tests()[0].inputs); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  while (!has("inferring 1") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(has("loading the model"));
  CHECK(has("inferring 1"));
  // The runner hangs in that inference: the line came before any answer.
  CHECK(infer.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  auto r = infer.get();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInternal);
  CHECK_THAT(r.status().message(), Catch::Contains("its stderr: loading the model\ninferring 1"));
}

TEST_CASE("runner: self-test of a URL whose server ignores Range downloads it whole",
          "[runner][self-test][range]") {
  Fixture f;
  // Python's own http.server answers every Range request with 200.
  const std::string out = f.tmp.file("http.out");
  const pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(fd, 1);
    ::dup2(null, 2);
    const std::string dir = fs::path(f.carton).parent_path().string();
    ::execl("/usr/bin/python3", "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
            "--directory", dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string text;
  for (int i = 0; i < 1000 && text.find(" port ") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    text = ReadText(out);
  }
  const int port = text.find(" port ") == std::string::npos
                       ? 0
                       : std::atoi(text.c_str() + text.find(" port ") + 6);
  const std::string url =
      "http://127.0.0.1:" + std::to_string(port) + "/" + fs::path(f.carton).filename().string();
  auto r = f.Cli("self-test '" + url + "'", NoopRunnerDir());
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  REQUIRE(port > 0);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("1 of 1 self-tests passed"));
  CHECK_THAT(r.err, Catch::Contains("the server ignores range requests; downloading it whole"));
}
