// The Python runner hands the device to the model: `device=` to an entry
// function that takes it, and the carton_runner module (device(),
// device_uuid(), device_requested()) to any model code
// (runners/python/FORMAT.md "Device"). The stand-in CUDA driver
// (CARTON_FAKE_CUDA) lists two GPUs.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "python_runner/python_runner_testing.h"

using namespace carton;
using namespace carton::testing;

namespace {

constexpr char kGpu0[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";
constexpr char kGpu1[] = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f";

// Prints what it was given when made; returns y = [1].
constexpr char kDeviceModel[] = R"PY(import numpy as np
import carton_runner


class Model:
    def infer_with_tensors(self, tensors):
        return {"y": np.array([1.0], dtype=np.float32)}


def get_model(device, scale=1):
    print(f"device={device} accessor={carton_runner.device()} "
          f"uuid={carton_runner.device_uuid()} requested={carton_runner.device_requested()}")
    return Model()
)PY";

// Takes no device: none is passed.
constexpr char kPlainModel[] = R"PY(import numpy as np
import carton_runner


class Model:
    def infer_with_tensors(self, tensors):
        return {"y": np.array([1.0], dtype=np.float32)}


def get_model(**kwargs):
    print(f"kwargs={sorted(kwargs)} accessor={carton_runner.device()}")
    return Model()
)PY";

std::string Config(const std::string& extra_opts = "") {
  return "spec_version = 1\n" + PythonRunnerToml(extra_opts);
}

// `carton infer` of the model in `dir` with `device_args`, the stand-in
// driver or none.
CommandResult Infer(const TempDir& tmp, const std::string& dir, const std::string& device_args,
                    bool driver = true) {
  ::setenv("CARTON_LIBCUDA", driver ? CARTON_FAKE_CUDA : "/nonexistent/libcuda.so.1", 1);
  auto r = Carton(tmp.file("cache"), "infer " + Quote(dir) + " --output " +
                                         Quote(tmp.file("out.safetensors")) + " " + device_args);
  ::unsetenv("CARTON_LIBCUDA");
  return r;
}

}  // namespace

TEST_CASE("python runner device: the entry function gets device= and carton_runner says it",
          "[python][device]") {
  TempDir tmp;
  const std::string dir = WritePythonModel(tmp.file("m"), Config(), {{"main.py", kDeviceModel}});
  auto gpu = Infer(tmp, dir, "--device 1");
  INFO(gpu.out << gpu.err);
  CHECK(gpu.exit_code == 0);
  CHECK_THAT(gpu.err, Catch::Contains(std::string("[python] device=cuda:0 accessor=cuda:0 uuid=") +
                                      kGpu1 + " requested=True"));
  auto by_default = Infer(tmp, dir, "");
  CHECK(by_default.exit_code == 0);
  CHECK_THAT(by_default.err,
             Catch::Contains(std::string("[python] device=cuda:0 accessor=cuda:0 uuid=") + kGpu0 +
                             " requested=False"));
  auto cpu = Infer(tmp, dir, "--device cpu", /*driver=*/false);
  CHECK(cpu.exit_code == 0);
  CHECK_THAT(cpu.err, Catch::Contains("[python] device=cpu accessor=cpu uuid=None requested=True"));
  auto no_driver = Infer(tmp, dir, "", /*driver=*/false);
  CHECK(no_driver.exit_code == 0);
  CHECK_THAT(no_driver.err,
             Catch::Contains("[python] device=cpu accessor=cpu uuid=None requested=False"));
}

TEST_CASE("python runner device: an entry function that does not name device gets none",
          "[python][device]") {
  TempDir tmp;
  const std::string dir =
      WritePythonModel(tmp.file("m"), Config("\"model.scale\" = 2\n"), {{"main.py", kPlainModel}});
  auto r = Infer(tmp, dir, "--device 0");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[python] kwargs=['scale'] accessor=cuda:0"));
}

TEST_CASE("python runner device: a model.device option of the carton wins over the device",
          "[python][device]") {
  TempDir tmp;
  const std::string dir = WritePythonModel(tmp.file("m"), Config("\"model.device\" = \"meta\"\n"),
                                           {{"main.py", kDeviceModel}});
  auto r = Infer(tmp, dir, "--device 1");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[python] device=meta accessor=cuda:0"));
}
