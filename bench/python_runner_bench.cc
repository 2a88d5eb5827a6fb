// The Python runner's cost per call in serve mode, against the noop
// runner's in the same run: both get the same 4 MiB float32 input through
// runner::RunnerProcess (shared-memory arenas); the Python model is a numpy
// identity (`return {"x": tensors["x"]}`), so the difference is what the
// Python runner adds: the GIL, numpy views of the input, the call, and the
// conversion of the output.
//
//   python_runner_bench NOOP_RUNNER PYTHON_RUNNER SCRATCH_DIR [calls] [rounds]
//
// Calls alternate between the two runners; each round prints the median
// time per call of each and their ratio, then the median over rounds and
// the load average.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/runner/client.h"
#include "carton/runner/runner.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using carton::bench::Median;
using carton::runner::Tensor;

namespace {

constexpr std::size_t kFloats = std::size_t{1} << 20;  // 4 MiB

void WriteModel(const fs::path& dir, const std::string& runner_toml, const std::string& file,
                const std::string& text) {
  fs::create_directories(dir / "model");
  std::ofstream(dir / "carton.toml") << "spec_version = 1\n[runner]\n" << runner_toml;
  std::ofstream(dir / "model" / file) << text;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double Call(carton::runner::RunnerProcess& p, const std::vector<Tensor>& in, bool* ok) {
  auto start = Clock::now();
  auto out = p.Infer(in);
  double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  if (!out.ok() || out->size() != 1 || (*out)[0].data.size() != in[0].data.size()) *ok = false;
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s NOOP_RUNNER PYTHON_RUNNER SCRATCH_DIR [calls] [rounds]\n",
                 argv[0]);
    return 2;
  }
  const int calls = argc > 4 ? std::stoi(argv[4]) : 200;
  const int rounds = argc > 5 ? std::stoi(argv[5]) : 5;
  const fs::path dir = argv[3];
  WriteModel(dir / "noop",
             "runner_name = \"noop\"\nrequired_framework_version = \">=1\"\n"
             "runner_compat_version = 1\n",
             "empty.txt", "");
  WriteModel(dir / "python",
             "runner_name = \"python\"\nrequired_framework_version = \">=3\"\n"
             "runner_compat_version = 1\n[runner.opts]\nentrypoint_package = \"main\"\n"
             "entrypoint_fn = \"get_model\"\n",
             "main.py",
             "class Identity:\n"
             "    def infer_with_tensors(self, tensors):\n"
             "        return {'x': tensors['x']}\n\n\n"
             "def get_model():\n"
             "    return Identity()\n");

  std::vector<float> values(kFloats);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : values) v = dist(rng);
  std::vector<std::byte> bytes(kFloats * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  const std::vector<Tensor> input = {
      Tensor::Owned("x", carton::DataType::kFloat32, {kFloats}, std::move(bytes))};

  auto noop = carton::runner::RunnerProcess::Start(argv[1], (dir / "noop").string());
  auto python = carton::runner::RunnerProcess::Start(argv[2], (dir / "python").string());
  if (!noop.ok() || !python.ok()) {
    std::fprintf(stderr, "cannot start the runners: %s %s\n", noop.status().ToString().c_str(),
                 python.status().ToString().c_str());
    return 2;
  }
  // Correctness once: the identity gives back the same bytes.
  auto check = python->Infer(input);
  if (!check.ok() || (*check)[0].data.size() != input[0].data.size() ||
      std::memcmp((*check)[0].data.data(), input[0].data.data(), input[0].data.size()) != 0) {
    std::fprintf(stderr, "the Python identity model did not return its input\n");
    return 1;
  }

  bool ok = true;
  for (int i = 0; i < 20; ++i) {
    Call(*noop, input, &ok);
    Call(*python, input, &ok);
  }
  std::printf("4 MiB float32 round trip in serve mode, %d calls per round (median us per call)\n",
              calls);
  std::printf("round  noop      python    ratio\n");
  std::vector<double> noop_medians, python_medians, ratios;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> n, p;
    for (int i = 0; i < calls; ++i) {
      n.push_back(Call(*noop, input, &ok));
      p.push_back(Call(*python, input, &ok));
    }
    const double mn = Median(n), mp = Median(p);
    noop_medians.push_back(mn);
    python_medians.push_back(mp);
    ratios.push_back(mp / mn);
    std::printf("%-6d %-9.1f %-9.1f %.2f\n", r + 1, mn, mp, mp / mn);
  }
  if (!ok) {
    std::fprintf(stderr, "an inference failed\n");
    return 1;
  }
  std::printf("median %-9.1f %-9.1f %.2f  (python - noop: %.1f us)\n", Median(noop_medians),
              Median(python_medians), Median(ratios),
              Median(python_medians) - Median(noop_medians));
  std::printf("load average: %s\n", LoadAverage().c_str());
  return 0;
}
