// The device a runner runs on: the CUDA_VISIBLE_DEVICES it is started with
// and the device the SDK hands it (LoadContext::device), seen from inside
// by the fake runner (FAKE_RUNNER_DEVICE=1 writes them to its stderr),
// through `carton self-test`/`infer` and RunnerProcess, with the stand-in
// CUDA driver (two GPUs) and without any driver.
#include "carton/loader/device.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "carton/runner/client.h"
#include "loader/loader_testing.h"

using namespace carton;
using namespace carton::testing;

namespace {

constexpr char kGpu0[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";
constexpr char kGpu1[] = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f";
constexpr char kNoDriver[] = "/nonexistent/libcuda.so.1";

struct DeviceFixture {
  TempDir tmp;
  std::string carton;
  std::string runners;
  DeviceFixture() {
    carton = tmp.file("m.carton");
    PackDir(MakeModelDir(tmp.file("m")), carton);
    runners = tmp.file("runners");
    WriteFakeRunner(runners, "noop", "FAKE_RUNNER_DEVICE=1");
  }
  // `carton self-test` with `device_args`, the driver `libcuda`, and a
  // CUDA_VISIBLE_DEVICES of our own that the runner must not inherit.
  CommandResult SelfTest(const std::string& device_args, const std::string& libcuda) const {
    return Run("CUDA_VISIBLE_DEVICES=inherited CARTON_LIBCUDA='" + libcuda +
               "' CARTON_CACHE_DIR='" + tmp.file("cache") + "' CARTON_RUNNER_PATH='" + runners +
               "' " + CartonBin() + " self-test '" + carton + "' " + device_args);
  }
};

std::string Seen(const std::string& device, bool requested, const std::string& visible) {
  return "[noop] device=" + device + " requested=" + (requested ? "1" : "0") +
         " CUDA_VISIBLE_DEVICES=" + visible + "\n";
}

}  // namespace

TEST_CASE("runner device: --device cpu starts the runner with CUDA_VISIBLE_DEVICES empty",
          "[runner][device]") {
  DeviceFixture f;
  for (const char* libcuda : {CARTON_FAKE_CUDA, kNoDriver}) {
    auto r = f.SelfTest("--device cpu", libcuda);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains(Seen("cpu", true, "")));
  }
}

TEST_CASE("runner device: an index and cuda:N start the runner on that GPU's UUID",
          "[runner][device]") {
  DeviceFixture f;
  for (const char* spec : {"1", "cuda:1"}) {
    auto r = f.SelfTest(std::string("--device ") + spec, CARTON_FAKE_CUDA);
    INFO(spec << "\n" << r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains(Seen(kGpu1, true, kGpu1)));
  }
}

TEST_CASE("runner device: GPU- and MIG- UUIDs reach the runner as they are", "[runner][device]") {
  DeviceFixture f;
  for (const std::string uuid :
       {std::string(kGpu1), std::string("MIG-10111213-1415-1617-1819-1a1b1c1d1e1f"),
        std::string("MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f/2/0")}) {
    auto r = f.SelfTest("--device " + uuid, CARTON_FAKE_CUDA);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains(Seen(uuid, true, uuid)));
  }
}

TEST_CASE("runner device: the default is the first GPU, else the CPU without a word",
          "[runner][device]") {
  DeviceFixture f;
  auto gpu = f.SelfTest("", CARTON_FAKE_CUDA);
  INFO(gpu.out << gpu.err);
  CHECK(gpu.exit_code == 0);
  CHECK(gpu.err == Seen(kGpu0, false, kGpu0));
  // No driver: the CPU, and nothing on stderr but the runner's line.
  auto cpu = f.SelfTest("", kNoDriver);
  INFO(cpu.out << cpu.err);
  CHECK(cpu.exit_code == 0);
  CHECK(cpu.err == Seen("cpu", false, ""));
}

TEST_CASE("runner device: a GPU that is not there is refused before the carton loads",
          "[runner][device]") {
  DeviceFixture f;
  auto none = f.SelfTest("--device 0", kNoDriver);
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::StartsWith("carton self-test: device \"0\": no GPU (no CUDA driver"));
  auto past = f.SelfTest("--device cuda:2", CARTON_FAKE_CUDA);
  CHECK(past.exit_code == 2);
  CHECK_THAT(past.err, Catch::Contains("carton self-test: device \"cuda:2\": no such GPU (2 found: "
                                       "0 GPU-00010203"));
  CHECK_THAT(past.err, !Catch::Contains("[noop]"));
  auto bad = f.SelfTest("--device gpu1", CARTON_FAKE_CUDA);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("device \"gpu1\": not a device (cpu, N, cuda:N, "
                                      "GPU-<uuid> or MIG-<uuid>)"));
}

TEST_CASE("runner device: RunnerProcess starts the runner on the device of its options",
          "[runner][device]") {
  DeviceFixture f;
  ScopedEnv cache("CARTON_CACHE_DIR", f.tmp.file("cache"));
  ScopedEnv driver("CARTON_LIBCUDA", CARTON_FAKE_CUDA);  // a UUID wants a GPU listed
  std::mutex mu;
  std::vector<std::string> lines;
  runner::RunnerProcessOptions options;
  options.on_stderr_line = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  };
  auto device = loader::ResolveDevice(kGpu1);
  REQUIRE(device.ok());
  options.device = *device;
  auto p = runner::RunnerProcess::Start(f.runners + "/carton-runner-noop", f.carton, options);
  REQUIRE(p.ok());
  REQUIRE(p->Close().ok());
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.front() + "\n" == Seen(kGpu1, true, kGpu1).substr(7));
}

TEST_CASE("runner device: a runner run by hand takes cpu or a UUID, not an index",
          "[runner][device]") {
  DeviceFixture f;
  const std::string env = "CARTON_CACHE_DIR='" + f.tmp.file("cache") + "' FAKE_RUNNER_DEVICE=1 ";
  auto uuid = Run(env + FakeRunnerBin() + " self-test '" + f.carton + "' --device " + kGpu1);
  INFO(uuid.out << uuid.err);
  CHECK(uuid.exit_code == 0);
  CHECK_THAT(uuid.err, Catch::Contains(std::string("device=") + kGpu1 +
                                       " requested=1 CUDA_VISIBLE_DEVICES=" + kGpu1));
  auto by_default =
      Run(env + FakeRunnerBin() + " self-test '" + f.carton + "' --default-device cpu");
  CHECK_THAT(by_default.err, Catch::Contains("device=cpu requested=0 CUDA_VISIBLE_DEVICES=\n"));
  auto index = Run(env + FakeRunnerBin() + " self-test '" + f.carton + "' --device 1");
  CHECK(index.exit_code == 2);
  CHECK_THAT(index.err, Catch::Contains("device \"1\": a runner takes cpu or a GPU's UUID"));
}

TEST_CASE("runner device: self-test and infer --json say where the runner ran",
          "[runner][device]") {
  DeviceFixture f;
  auto self_test = f.SelfTest("--json --device 1", CARTON_FAKE_CUDA);
  INFO(self_test.out << self_test.err);
  REQUIRE(self_test.exit_code == 0);
  CHECK(nlohmann::json::parse(self_test.out)["device"] == kGpu1);
  auto cpu = f.SelfTest("--json", kNoDriver);
  REQUIRE(cpu.exit_code == 0);
  CHECK(nlohmann::json::parse(cpu.out)["device"] == "cpu");
}
