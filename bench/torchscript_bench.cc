// The cost of the process boundary for TorchScript models: a small MLP
// called directly through libtorch in this process, against the same
// module run by carton-runner-torchscript in `serve` mode through
// runner::RunnerProcess (inputs and outputs in shared memory).
//
//   torchscript_bench RUNNER SCRATCH_DIR [calls]
//
// Prints the median time per call of each and the overhead (difference),
// for a batch of 1 and a batch of 64. Both sides use one intra-op thread.
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/runner/client.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using carton::bench::Median;

torch::jit::Module Mlp() {
  torch::jit::Module m("Mlp");
  m.register_buffer("w1", torch::randn({256, 512}) / 16);
  m.register_buffer("w2", torch::randn({512, 512}) / 22);
  m.register_buffer("w3", torch::randn({512, 10}) / 22);
  m.define(R"(
def forward(self, x: Tensor) -> Tensor:
    h = torch.relu(torch.matmul(x, self.w1))
    h = torch.relu(torch.matmul(h, self.w2))
    return torch.matmul(h, self.w3)
)");
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s RUNNER SCRATCH_DIR [calls]\n", argv[0]);
    return 2;
  }
  const std::string runner = argv[1];
  const fs::path dir = fs::path(argv[2]) / "mlp";
  const int calls = argc > 3 ? std::stoi(argv[3]) : 2000;
  fs::create_directories(dir / "model");
  Mlp().save((dir / "model" / "model.pt").string());
  std::ofstream(dir / "carton.toml") << R"(spec_version = 1
[[input]]
name = "x"
dtype = "float32"
shape = ["batch", 256]
[[output]]
name = "y"
dtype = "float32"
shape = ["batch", 10]
[runner]
runner_name = "torchscript"
required_framework_version = ">=1"
runner_compat_version = 1
[runner.opts]
num_threads = 1
)";

  at::set_num_threads(1);
  torch::jit::Module direct = torch::jit::load((dir / "model" / "model.pt").string());
  direct.eval();
  auto served = carton::runner::RunnerProcess::Start(runner, dir.string());
  if (!served.ok()) {
    std::fprintf(stderr, "cannot start %s: %s\n", runner.c_str(),
                 served.status().ToString().c_str());
    return 2;
  }

  std::printf("%-8s %14s %14s %14s\n", "batch", "direct us", "serve us", "overhead us");
  for (std::int64_t batch : {1, 64}) {
    at::Tensor x = torch::randn({batch, 256});
    auto input = carton::Tensor::View(
        "x", carton::DataType::kFloat32, {static_cast<std::uint64_t>(batch), 256},
        carton::ByteView(static_cast<const std::byte*>(x.data_ptr()), x.nbytes()));
    std::vector<double> d, s;
    for (int i = 0; i < calls; ++i) {
      auto t0 = Clock::now();
      {
        torch::NoGradGuard no_grad;
        at::Tensor y = direct.forward({x}).toTensor();
        (void)y.data_ptr();
      }
      auto t1 = Clock::now();
      auto out = served->Infer({input});
      auto t2 = Clock::now();
      if (!out.ok() || out->size() != 1) {
        std::fprintf(stderr, "infer failed: %s\n", out.status().ToString().c_str());
        return 2;
      }
      d.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      s.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
    const double md = Median(d), ms = Median(s);
    std::printf("%-8lld %14.1f %14.1f %14.1f\n", static_cast<long long>(batch), md, ms, ms - md);
  }
  auto closed = served->Close();
  return closed.ok() ? 0 : 2;
}
