// The C++ client's round trip through the noop runner in serve mode: the
// baseline that bench/python_package_bench.py compares `Model.infer` with.
// A 4 MiB float32 tensor goes to the runner and back through
// runner::RunnerProcess (shared-memory arenas), as `Model.infer` sends it.
//
//   infer_round_trip_bench NOOP_RUNNER MODEL_ROOT [calls] [floats]
//
// MODEL_ROOT is a carton directory for the noop runner (carton.toml and
// model/); `floats` is the tensor's length (default 1 << 20: 4 MiB). Prints
// the median time per call in microseconds, alone on a line, after 20
// warm-up calls.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/runner/client.h"
#include "carton/runner/runner.h"

using Clock = std::chrono::steady_clock;
using carton::runner::Tensor;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s NOOP_RUNNER MODEL_ROOT [calls] [floats]\n", argv[0]);
    return 2;
  }
  const int calls = argc > 3 ? std::stoi(argv[3]) : 200;
  const std::size_t floats = argc > 4 ? std::stoull(argv[4]) : std::size_t{1} << 20;
  std::vector<std::byte> bytes(floats * 4);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 131 + 7);
  const std::vector<Tensor> input = {
      Tensor::Owned("x", carton::DataType::kFloat32, {floats}, std::move(bytes))};

  auto process = carton::runner::RunnerProcess::Start(argv[1], argv[2]);
  if (!process.ok()) {
    std::fprintf(stderr, "cannot start the runner: %s\n", process.status().ToString().c_str());
    return 2;
  }
  std::vector<double> times;
  for (int i = 0; i < 20 + calls; ++i) {
    const auto start = Clock::now();
    auto out = process->Infer(input);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!out.ok() || out->size() != 1 || (*out)[0].data.size() != input[0].data.size() ||
        std::memcmp((*out)[0].data.data(), input[0].data.data(), input[0].data.size()) != 0) {
      std::fprintf(stderr, "the noop runner did not return its input\n");
      return 1;
    }
    if (i >= 20) times.push_back(us);
  }
  std::printf("%.1f\n", carton::bench::Median(times));
  return 0;
}
