// Device specs: what parses and what is refused, and resolution through the
// CUDA driver. The driver is opened once per process, so every resolution
// here is against the stand-in driver (CARTON_FAKE_CUDA, two GPUs whose
// UUIDs are GPU-00010203-... and GPU-10111213-...); resolution without a
// driver is checked through the CLI (tests/tools/devices_cli_test.cc).
#include "carton/loader/device.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "loader/loader_testing.h"

using namespace carton;
using namespace carton::testing;
using carton::loader::Device;
using carton::loader::DeviceSpec;

namespace {

constexpr char kGpu0[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";
constexpr char kGpu1[] = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f";
constexpr char kNoDriver[] = "/nonexistent/libcuda.so.1";

// Points the driver at the stand-in before anything in this process opens it.
void UseFakeDriver() { ::setenv("CARTON_LIBCUDA", CARTON_FAKE_CUDA, 1); }

}  // namespace

TEST_CASE("device: cpu, N, cuda:N, GPU- and MIG- UUIDs parse", "[device]") {
  auto cpu = loader::ParseDeviceSpec("cpu");
  REQUIRE(cpu.ok());
  CHECK(cpu->kind == DeviceSpec::Kind::kCpu);
  CHECK(loader::ParseDeviceSpec("CPU")->kind == DeviceSpec::Kind::kCpu);
  for (const char* text : {"1", "cuda:1", "CUDA:1"}) {
    auto s = loader::ParseDeviceSpec(text);
    REQUIRE(s.ok());
    CHECK(s->kind == DeviceSpec::Kind::kIndex);
    CHECK(s->index == 1);
    CHECK(s->text == text);
  }
  for (const char* text : {kGpu1, "MIG-10111213-1415-1617-1819-1a1b1c1d1e1f",
                           "MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f/1/0",
                           "GPU-ABCDEF01-2345-6789-ABCD-EF0123456789"}) {
    auto s = loader::ParseDeviceSpec(text);
    REQUIRE(s.ok());
    CHECK(s->kind == DeviceSpec::Kind::kUuid);
    CHECK(s->uuid == text);
  }
  auto none = loader::ParseDeviceSpec("");
  REQUIRE(none.ok());
  CHECK(none->kind == DeviceSpec::Kind::kDefault);
  CHECK(loader::DeviceSpecForIndex(3)->index == 3);
}

TEST_CASE("device: a spec of none of the forms is refused, naming them", "[device]") {
  for (const char* text :
       {"gpu0", "cuda", "cuda:", "cuda:-1", "-1", "1.5", "cuda:1x", " 1", "cpu:0", "99999999999"}) {
    auto s = loader::ParseDeviceSpec(text);
    INFO(text);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.status().message(), Catch::Contains("(cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)"));
  }
  CHECK(loader::ParseDeviceSpec("gpu0").status().message() ==
        "device \"gpu0\": not a device (cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)");
  for (const char* text : {"GPU-", "GPU-1234", "GPU-10111213-1415-1617-1819-1a1b1c1d1e1g",
                           "GPU-10111213141516171819-1a1b1c1d1e1f", "MIG-xyz",
                           "MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f",
                           "MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f/1/x"}) {
    auto s = loader::ParseDeviceSpec(text);
    INFO(text);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.status().message(), Catch::Contains("not a GPU or MIG UUID"));
  }
  auto negative = loader::DeviceSpecForIndex(-1);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message() ==
        "device -1: not a GPU index (cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>)");
}

TEST_CASE("device: an index resolves to that GPU's UUID through the driver", "[device][gpu]") {
  UseFakeDriver();
  for (const char* text : {"1", "cuda:1"}) {
    auto d = loader::ResolveDevice(text);
    REQUIRE(d.ok());
    CHECK(d->gpu);
    CHECK(d->requested);
    CHECK(d->index == 1);
    CHECK(d->uuid == kGpu1);
    CHECK(d->name == "Fake GPU 1");
    CHECK(d->VisibleDevices() == kGpu1);
    CHECK(d->Describe() == std::string("cuda:1 (Fake GPU 1, ") + kGpu1 + ")");
  }
}

TEST_CASE("device: an index past the GPUs the driver lists is refused, listing them",
          "[device][gpu]") {
  UseFakeDriver();
  auto d = loader::ResolveDevice("cuda:2");
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == StatusCode::kNotFound);
  CHECK(d.status().message() ==
        std::string("device \"cuda:2\": no such GPU (2 found: 0 ") + kGpu0 + ", 1 " + kGpu1 + ")");
}

TEST_CASE("device: the default is the first GPU the driver lists", "[device][gpu]") {
  UseFakeDriver();
  Device d = loader::DefaultDevice();
  CHECK(d.gpu);
  CHECK_FALSE(d.requested);
  CHECK(d.uuid == kGpu0);
  CHECK(d.note.empty());
  auto same = loader::ResolveDevice("");
  REQUIRE(same.ok());
  CHECK(same->uuid == kGpu0);
}

TEST_CASE("device: cpu, and a UUID under a CUDA_VISIBLE_DEVICES, resolve without the driver",
          "[device]") {
  // A driver that cannot be opened: these never ask it.
  ::setenv("CARTON_LIBCUDA", "/nonexistent/libcuda.so.1", 0);
  ::setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  auto cpu = loader::ResolveDevice("cpu");
  REQUIRE(cpu.ok());
  CHECK_FALSE(cpu->gpu);
  CHECK(cpu->requested);
  CHECK(cpu->VisibleDevices().empty());
  CHECK(cpu->Name() == "cpu");
  const std::string mig = "MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f/1/0";
  auto uuid = loader::ResolveDevice(mig);
  REQUIRE(uuid.ok());
  CHECK(uuid->gpu);
  CHECK(uuid->index == -1);
  CHECK(uuid->VisibleDevices() == mig);
  CHECK(uuid->Name() == mig);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_CASE("device: a MIG instance's GI and CI are short numbers", "[device]") {
  const std::string gpu = "MIG-GPU-10111213-1415-1617-1819-1a1b1c1d1e1f/";
  CHECK(loader::ParseDeviceSpec(gpu + "13/99999").ok());
  for (const std::string& text :
       {gpu + "1/" + std::string(6, '9'), gpu + std::string(4096, '1') + "/0", gpu + "1/",
        gpu + "/0", gpu + "1/0/2"}) {
    auto s = loader::ParseDeviceSpec(text);
    INFO(text.substr(0, 80));
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.status().message(), Catch::Contains("not a GPU or MIG UUID"));
  }
}

TEST_CASE("device: a runner is told cpu or a UUID, never an index", "[device]") {
  auto gpu = loader::DeviceForRunner(kGpu1, /*requested=*/false);
  REQUIRE(gpu.ok());
  CHECK(gpu->uuid == kGpu1);
  CHECK_FALSE(gpu->requested);
  CHECK(loader::DeviceForRunner("cpu", true)->requested);
  for (const char* text : {"1", "cuda:0"}) {
    auto r = loader::DeviceForRunner(text, true);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains("a runner takes cpu or a GPU's UUID"));
  }
  CHECK_FALSE(loader::DeviceForRunner("", true).ok());
}

TEST_CASE("device: carton load --device checks the GPU is there and reports it", "[device][cli]") {
  TempDir tmp;
  const std::string carton = tmp.file("m.carton");
  PackDir(MakeModelDir(tmp.file("m")), carton);
  const std::string cache = "CARTON_CACHE_DIR='" + tmp.file("cache") + "' ";
  auto gpu = Run(cache + "CARTON_LIBCUDA='" + CARTON_FAKE_CUDA + "' " + CartonBin() +
                 " load --json --device cuda:1 '" + carton + "'");
  INFO(gpu.err);
  CHECK(gpu.exit_code == 0);
  CHECK(nlohmann::json::parse(gpu.out)["device"] == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  auto cpu = Run(cache + "CARTON_LIBCUDA='" + kNoDriver + "' " + CartonBin() +
                 " load --json --device cpu '" + carton + "'");
  CHECK(cpu.exit_code == 0);
  CHECK(nlohmann::json::parse(cpu.out)["device"] == "cpu");
  auto plain =
      Run(cache + "CARTON_LIBCUDA='" + kNoDriver + "' " + CartonBin() + " load '" + carton + "'");
  CHECK(plain.exit_code == 0);
  CHECK(plain.err.empty());  // no --device: the driver is not asked
  auto missing = Run(cache + "CARTON_LIBCUDA='" + kNoDriver + "' " + CartonBin() +
                     " load --device 0 '" + carton + "'");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::StartsWith("carton load: device \"0\": no GPU (no CUDA driver: "));
}

TEST_CASE("device: a UUID is refused where the driver lists no GPU and nothing hides them",
          "[device][cli]") {
  TempDir tmp;
  const std::string carton = tmp.file("m.carton");
  PackDir(MakeModelDir(tmp.file("m")), carton);
  const std::string load = "CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + CartonBin() +
                           " load --json --device " + kGpu1 + " '" + carton + "'";
  auto none =
      Run("env -u CUDA_VISIBLE_DEVICES CARTON_LIBCUDA='" + std::string(kNoDriver) + "' " + load);
  CHECK(none.exit_code == 2);
  CHECK_THAT(nlohmann::json::parse(none.out)["error"]["message"].get<std::string>(),
             Catch::StartsWith(std::string("device \"") + kGpu1 + "\": no GPU (no CUDA driver: "));
  auto zero = Run("env -u CUDA_VISIBLE_DEVICES FAKE_CUDA_DEVICES=0 CARTON_LIBCUDA='" +
                  std::string(CARTON_FAKE_CUDA) + "' " + load);
  CHECK(zero.exit_code == 2);
  CHECK_THAT(nlohmann::json::parse(zero.out)["error"]["message"].get<std::string>(),
             Catch::Contains("no GPU (the CUDA driver ("));
  // Listed GPUs, or a CUDA_VISIBLE_DEVICES of the caller's (the runner's
  // replaces it): passed on as given.
  for (const std::string env :
       {"env -u CUDA_VISIBLE_DEVICES CARTON_LIBCUDA='" + std::string(CARTON_FAKE_CUDA) + "' ",
        "CUDA_VISIBLE_DEVICES= CARTON_LIBCUDA='" + std::string(kNoDriver) + "' "}) {
    auto passed = Run(env + load);
    INFO(env << "\n" << passed.err);
    CHECK(passed.exit_code == 0);
    CHECK(nlohmann::json::parse(passed.out)["device"] == kGpu1);
  }
}
