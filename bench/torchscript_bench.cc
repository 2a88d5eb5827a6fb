// Two measurements of carton-runner-torchscript.
//
// mlp: the cost of the process boundary. A small MLP called directly
// through libtorch in this process, against the same module run by the
// runner in `serve` mode through runner::RunnerProcess (inputs and outputs
// in shared memory), for a batch of 1 and a batch of 64.
//
// dict: what the dict-of-Any calling convention (forward(self, inputs:
// Dict[str, Any]), the original implementation's) costs over the
// dict-of-Tensor one, for small inputs. Three modules compute the same
// y = a * b + a from two float32 [16] inputs: one taking Dict[str, Tensor],
// one taking Dict[str, Any]; a third also takes a str and a List[str] and
// returns them. Each is called three ways, the calls of all interleaved:
// forward() directly with its dict prebuilt (the baseline: the model's own
// cost), through the runner in this process (MakeTorchScriptRunner: Load +
// Infer, conversions and checks but no process boundary), and through
// `serve`.
//
//   torchscript_bench RUNNER SCRATCH_DIR [calls] [mlp|dict|all]
//
// Prints the median time per call of each and the differences. Everything
// uses one intra-op thread.
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "carton/runner/client.h"
#include "carton/torchscript/torchscript_runner.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using carton::bench::Median;
using carton::runner::Tensor;

constexpr char kRunnerToml[] = R"([runner]
runner_name = "torchscript"
required_framework_version = ">=1"
runner_compat_version = 1
[runner.opts]
num_threads = 1
)";

double Micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// An unpacked carton directory holding `module` as model/model.pt.
fs::path ModelDir(const fs::path& dir, torch::jit::Module module, const std::string& spec) {
  fs::create_directories(dir / "model");
  module.save((dir / "model" / "model.pt").string());
  std::ofstream(dir / "carton.toml") << spec << kRunnerToml;
  return dir;
}

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

int BenchMlp(const std::string& runner, const fs::path& scratch, int calls) {
  const fs::path dir = ModelDir(scratch / "mlp", Mlp(), R"(spec_version = 1
[[input]]
name = "x"
dtype = "float32"
shape = ["batch", 256]
[[output]]
name = "y"
dtype = "float32"
shape = ["batch", 10]
)");
  torch::jit::Module direct = torch::jit::load((dir / "model" / "model.pt").string());
  direct.eval();
  auto served = carton::runner::RunnerProcess::Start(runner, dir.string());
  if (!served.ok()) {
    std::fprintf(stderr, "cannot start %s: %s\n", runner.c_str(),
                 served.status().ToString().c_str());
    return 2;
  }

  std::printf("mlp: a 256-512-512-10 MLP, direct forward() against serve mode\n");
  std::printf("%-8s %14s %14s %14s\n", "batch", "direct us", "serve us", "overhead us");
  for (std::int64_t batch : {1, 64}) {
    at::Tensor x = torch::randn({batch, 256});
    auto input =
        Tensor::View("x", carton::DataType::kFloat32, {static_cast<std::uint64_t>(batch), 256},
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
      d.push_back(Micros(t0, t1));
      s.push_back(Micros(t1, t2));
    }
    const double md = Median(d), ms = Median(s);
    std::printf("%-8lld %14.1f %14.1f %14.1f\n", static_cast<long long>(batch), md, ms, ms - md);
  }
  auto closed = served->Close();
  return closed.ok() ? 0 : 2;
}

// One calling convention under test: its module, its inputs, and a runner
// in this process and one in `serve` mode, both loaded from the same dir.
struct Convention {
  std::string name;
  fs::path dir;
  std::vector<Tensor> inputs;
  std::size_t outputs = 0;
  std::unique_ptr<carton::runner::Runner> in_process;
  std::optional<carton::runner::RunnerProcess> served;
  std::optional<torch::jit::Module> direct;  // the module, called without the runner
  c10::IValue prebuilt;                      // its argument, built once
  std::vector<double> direct_us, in_process_us, serve_us;
};

torch::jit::Module DictModule(const std::string& source) {
  torch::jit::Module m("DictModel");
  m.define(source);
  return m;
}

int BenchDict(const std::string& runner, const fs::path& scratch, int calls) {
  const std::string spec = "spec_version = 1\n";
  const at::Tensor a = torch::randn({16});
  const at::Tensor b = torch::randn({16});
  auto view = [](const char* name, const at::Tensor& t) {
    return Tensor::View(name, carton::DataType::kFloat32, {16},
                        carton::ByteView(static_cast<const std::byte*>(t.data_ptr()), t.nbytes()));
  };
  const std::vector<Tensor> numeric = {view("a", a), view("b", b)};
  std::vector<Tensor> with_strings = numeric;
  with_strings.push_back(Tensor::Strings("name", {}, {"carton"}));
  with_strings.push_back(Tensor::Strings("words", {4}, {"one", "two", "three", "four"}));

  std::vector<Convention> conventions;
  auto add = [&](std::string name, fs::path dir, std::vector<Tensor> inputs, std::size_t outputs) {
    Convention& c = conventions.emplace_back();
    c.name = std::move(name);
    c.dir = std::move(dir);
    c.inputs = std::move(inputs);
    c.outputs = outputs;
  };
  add("Dict[str, Tensor]",
      ModelDir(scratch / "dict_tensor", DictModule(R"(
def forward(self, inputs: Dict[str, Tensor]) -> Dict[str, Tensor]:
    return {"y": inputs["a"] * inputs["b"] + inputs["a"]}
)"),
               spec),
      numeric, 1);
  add("Dict[str, Any]",
      ModelDir(scratch / "dict_any", DictModule(R"(
def forward(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
    a = inputs["a"]
    b = inputs["b"]
    assert isinstance(a, Tensor)
    assert isinstance(b, Tensor)
    out: Dict[str, Any] = {"y": a * b + a}
    return out
)"),
               spec),
      numeric, 1);
  add("Dict[str, Any] +str",
      ModelDir(scratch / "dict_any_str", DictModule(R"(
def forward(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
    a = inputs["a"]
    b = inputs["b"]
    name = inputs["name"]
    words = inputs["words"]
    assert isinstance(a, Tensor)
    assert isinstance(b, Tensor)
    assert isinstance(name, str)
    assert isinstance(words, List[str])
    out: Dict[str, Any] = {"y": a * b + a, "greeting": "hello " + name, "words": words}
    return out
)"),
               spec),
      with_strings, 3);

  for (auto& c : conventions) {
    c.in_process = carton::torchscript::MakeTorchScriptRunner();
    carton::runner::LoadContext ctx;
    if (auto s = c.in_process->Load((c.dir / "model").string(), ctx); !s.ok()) {
      std::fprintf(stderr, "%s: cannot load: %s\n", c.name.c_str(), s.ToString().c_str());
      return 2;
    }
    carton::runner::RunnerProcessOptions quiet;
    quiet.on_stderr_line = [](std::string_view) {};
    auto served = carton::runner::RunnerProcess::Start(runner, c.dir.string(), quiet);
    if (!served.ok()) {
      std::fprintf(stderr, "cannot start %s: %s\n", runner.c_str(),
                   served.status().ToString().c_str());
      return 2;
    }
    c.served.emplace(std::move(served).value());
  }

  // Baselines: forward() on each module with its dict already built, so
  // neither conversion nor checks are counted.
  for (auto& c : conventions) {
    c.direct = torch::jit::load((c.dir / "model" / "model.pt").string());
    c.direct->eval();
    if (&c == &conventions[0]) {
      c10::Dict<std::string, at::Tensor> d;
      d.insert("a", a);
      d.insert("b", b);
      c.prebuilt = d;
    } else {
      c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
      d.insert("a", a);
      d.insert("b", b);
      if (c.inputs.size() > 2) {
        d.insert("name", std::string("carton"));
        d.insert("words", c10::List<std::string>({"one", "two", "three", "four"}));
      }
      c.prebuilt = d;
    }
  }

  auto check = [](const carton::Result<std::vector<Tensor>>& out, const Convention& c) {
    if (out.ok() && out->size() == c.outputs) return true;
    std::fprintf(stderr, "%s: infer failed: %s\n", c.name.c_str(),
                 out.ok() ? "wrong output count" : out.status().ToString().c_str());
    return false;
  };
  // Each iteration times every convention once per way of calling, in an
  // order that rotates, so that no convention always runs first or right
  // after another; differences are taken call by call (paired) and their
  // median reported, which cancels most of the drift of a loaded machine.
  const std::size_t n = conventions.size();
  for (int i = 0; i < calls; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      Convention& c = conventions[(k + i) % n];
      auto t0 = Clock::now();
      torch::NoGradGuard no_grad;
      auto y = c.direct->forward({c.prebuilt});
      (void)y.toGenericDict().size();
      c.direct_us.push_back(Micros(t0, Clock::now()));
    }
    for (std::size_t k = 0; k < n; ++k) {
      Convention& c = conventions[(k + i) % n];
      auto t0 = Clock::now();
      auto out = c.in_process->Infer(c.inputs);
      c.in_process_us.push_back(Micros(t0, Clock::now()));
      if (!check(out, c)) return 2;
    }
    for (std::size_t k = 0; k < n; ++k) {
      Convention& c = conventions[(k + i) % n];
      auto t0 = Clock::now();
      auto out = c.served->Infer(c.inputs);
      c.serve_us.push_back(Micros(t0, Clock::now()));
      if (!check(out, c)) return 2;
    }
  }

  auto paired = [](const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> d(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) d[i] = x[i] - y[i];
    return Median(d);
  };
  const Convention& base = conventions[0];
  std::printf("dict: y = a * b + a from float32 [16] inputs a, b (medians of %d calls each)\n",
              calls);
  std::printf("%-20s %10s %13s %10s %12s %10s %12s\n", "forward takes", "direct us",
              "in-process us", "runner us", "vs Tensor us", "serve us", "vs Tensor us");
  for (const auto& c : conventions) {
    std::printf("%-20s %10.1f %13.1f %10.1f %+12.1f %10.1f %+12.1f\n", c.name.c_str(),
                Median(c.direct_us), Median(c.in_process_us), paired(c.in_process_us, c.direct_us),
                paired(c.in_process_us, base.in_process_us), Median(c.serve_us),
                paired(c.serve_us, base.serve_us));
  }
  for (auto& c : conventions) {
    if (!c.served->Close().ok()) return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s RUNNER SCRATCH_DIR [calls] [mlp|dict|all]\n", argv[0]);
    return 2;
  }
  const std::string runner = argv[1];
  const fs::path scratch = argv[2];
  const int calls = argc > 3 ? std::stoi(argv[3]) : 2000;
  const std::string which = argc > 4 ? argv[4] : "all";
  if (which != "mlp" && which != "dict" && which != "all") {
    std::fprintf(stderr, "unknown section %s (mlp, dict or all)\n", which.c_str());
    return 2;
  }
  at::set_num_threads(1);
  if (which != "dict") {
    if (int rc = BenchMlp(runner, scratch, calls); rc != 0) return rc;
  }
  if (which != "mlp") {
    if (int rc = BenchDict(runner, scratch, calls); rc != 0) return rc;
  }
  return 0;
}
