// The TorchScript runner and devices, with Debian's libtorch (no CUDA
// support compiled in): a GPU the caller names is refused with how to build
// against a CUDA-enabled libtorch; the default device (the stand-in
// driver's first GPU) runs on the CPU with a note; the CPU runs as always.
#include <torch/cuda.h>
#include <torch/script.h>

#include <string>
// glog (through torch) defines CHECK; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "carton/torchscript/torchscript_runner.h"
#include "torchscript/torchscript_testing.h"

using carton::testing::CartonBin;
using carton::testing::CommandResult;
using carton::testing::Run;
using carton::testing::TempDir;
using carton::torchscript::testing::Env;
using carton::torchscript::testing::ModelDir;
using carton::torchscript::testing::Pack;
using carton::torchscript::testing::Runner;
using carton::torchscript::testing::Value;

namespace {

constexpr char kGpu0[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";

const char kDoubleSpec[] = R"(spec_version = 1
[[input]]
name = "x"
dtype = "float32"
shape = [3]
[[output]]
name = "y"
dtype = "float32"
shape = [3]
[[self_test]]
inputs = { x = "@tensor_data/x" }
expected_out = { y = "@tensor_data/y" }
)";

// A packed carton of y = 2 x, with a self-test.
struct DoubleCarton {
  TempDir tmp;
  std::string carton;
  DoubleCarton() {
    torch::jit::Module m("Double");
    m.define(R"(
def forward(self, x: Tensor) -> Tensor:
    return x * 2
)");
    at::Tensor x = torch::tensor({1.0f, -2.0f, 3.5f});
    ModelDir model(tmp, m, kDoubleSpec + Runner(), {Value("x", x), Value("y", x * 2)});
    carton = Pack(tmp, model, "stored");
  }
  CommandResult SelfTest(const std::string& device_args) const {
    return Run(Env(tmp) + "CARTON_LIBCUDA='" + CARTON_FAKE_CUDA + "' " + CartonBin() +
               " self-test '" + carton + "' " + device_args);
  }
};

}  // namespace

TEST_CASE("torchscript device: a GPU asked for is refused by a libtorch without CUDA",
          "[torchscript][device]") {
  DoubleCarton c;
  for (const std::string spec : {std::string("0"), std::string(kGpu0)}) {
    auto r = c.SelfTest("--device " + spec);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(std::string("device ") + kGpu0 +
                                      ": this carton-runner-torchscript is built against a "
                                      "libtorch without CUDA support"));
    CHECK_THAT(r.err, Catch::Contains("-DTorch_DIR=<the directory of a CUDA libtorch's "
                                      "TorchConfig.cmake>"));
  }
}

TEST_CASE("torchscript device: the default GPU runs on the CPU with a note",
          "[torchscript][device]") {
  DoubleCarton c;
  auto r = c.SelfTest("");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("PASS"));
  CHECK_THAT(r.err, Catch::Contains(std::string("[torchscript] carton-runner-torchscript: note: "
                                                "libtorch has no CUDA support here, so the model "
                                                "runs on the CPU, not on the default device ") +
                                    kGpu0));
  auto cpu = c.SelfTest("--device cpu");
  INFO(cpu.out << cpu.err);
  CHECK(cpu.exit_code == 0);
  CHECK_THAT(cpu.err, !Catch::Contains("note"));
}

TEST_CASE("torchscript device: Debian's libtorch reports no CUDA support",
          "[torchscript][device]") {
  CHECK_FALSE(torch::cuda::is_available());
}
