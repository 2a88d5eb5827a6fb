// carton-runner-torchscript end to end: TorchScript modules built here with
// torch::jit::Module::define, saved, packed into cartons with self-test
// data, then run through `carton self-test` / `carton infer`, which select
// the runner from $CARTON_RUNNER_PATH like any other.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/script.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
// glog (through torch) defines CHECK; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "carton/format/tensor_data.h"
#include "carton/safetensors/writer.h"
#include "carton/torchscript/torchscript_runner.h"
#include "testing.h"

namespace fs = std::filesystem;
using carton::DataType;
using carton::TensorValue;
using carton::testing::CartonBin;
using carton::testing::Run;
using carton::testing::TempDir;

namespace {

std::string RunnerBin() { return CARTON_TORCHSCRIPT_RUNNER; }

// Environment for a carton command: the runner's directory on the search
// path and a private cache.
std::string Env(const TempDir& tmp) {
  return "CARTON_RUNNER_PATH='" + fs::path(RunnerBin()).parent_path().string() +
         "' CARTON_CACHE_DIR='" + tmp.file("cache") + "' ";
}

std::vector<std::uint64_t> Shape(const at::Tensor& t) {
  std::vector<std::uint64_t> s;
  for (auto d : t.sizes()) s.push_back(static_cast<std::uint64_t>(d));
  return s;
}

DataType TypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return DataType::kFloat32;
    case torch::kFloat64:
      return DataType::kFloat64;
    case torch::kInt8:
      return DataType::kInt8;
    case torch::kInt16:
      return DataType::kInt16;
    case torch::kInt32:
      return DataType::kInt32;
    case torch::kInt64:
      return DataType::kInt64;
    case torch::kUInt8:
      return DataType::kUint8;
    default:
      FAIL("no carton dtype for " << t.scalar_type());
  }
  return DataType::kFloat32;
}

TensorValue Value(const std::string& name, at::Tensor t, DataType as) {
  t = t.contiguous();
  TensorValue v;
  v.name = name;
  v.dtype = as;
  v.shape = Shape(t);
  const auto* p = static_cast<const std::byte*>(t.data_ptr());
  v.data.assign(p, p + t.nbytes());
  return v;
}
TensorValue Value(const std::string& name, const at::Tensor& t) {
  return Value(name, t, TypeOf(t));
}

TensorValue Strings(const std::string& name, std::vector<std::string> s) {
  TensorValue v;
  v.name = name;
  v.dtype = DataType::kString;
  v.shape = {s.size()};
  v.strings = std::move(s);
  return v;
}

void WriteText(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A model directory: carton.toml, model/model.pt (or `model_file`) and
// tensor_data with the given tensors.
struct ModelDir {
  fs::path dir;
  ModelDir(const TempDir& tmp, torch::jit::Module& module, const std::string& toml,
           const std::vector<TensorValue>& tensors, const std::string& model_file = "model.pt")
      : dir(tmp.path() / "src") {
    fs::create_directories(dir / "model");
    fs::create_directories((dir / "model" / model_file).parent_path());
    module.save((dir / "model" / model_file).string());
    WriteText(dir / "carton.toml", toml);
    carton::TensorData data;
    data.tensors = tensors;
    REQUIRE(carton::WriteTensorDataDir((dir / "tensor_data").string(), data).ok());
  }
};

std::string Pack(const TempDir& tmp, const ModelDir& model, const std::string& compression) {
  std::string out = tmp.file("model.carton");
  auto r = Run(CartonBin() + " pack '" + model.dir.string() + "' -o '" + out + "' --compression " +
               compression);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

std::string Runner(const std::string& requirement = "=1.13.1", const std::string& opts = "") {
  return "[runner]\nrunner_name = \"torchscript\"\nrequired_framework_version = \"" + requirement +
         "\"\nrunner_compat_version = 1\n" + (opts.empty() ? "" : "[runner.opts]\n" + opts);
}

// y = x @ w + b, with w of shape [in, out].
torch::jit::Module Linear(const at::Tensor& w, const at::Tensor& b) {
  torch::jit::Module m("Linear");
  m.register_buffer("w", w);
  m.register_buffer("b", b);
  m.define(R"(
def forward(self, x: Tensor) -> Tensor:
    return torch.matmul(x, self.w) + self.b
)");
  return m;
}

const char kLinearSpec[] = R"(spec_version = 1
model_name = "linear"
[[input]]
name = "x"
dtype = "float32"
shape = ["batch", 4]
[[output]]
name = "y"
dtype = "float32"
shape = ["batch", 3]
[[self_test]]
name = "three rows"
inputs = { x = "@tensor_data/x" }
expected_out = { y = "@tensor_data/y" }
)";

struct LinearCase {
  at::Tensor w = torch::arange(12, torch::kFloat32).reshape({4, 3}) / 7;
  at::Tensor b = torch::tensor({0.5f, -1.0f, 2.0f});
  at::Tensor x = torch::arange(12, torch::kFloat32).reshape({3, 4}) - 5;
  torch::jit::Module module = Linear(w, b);
  at::Tensor y = torch::matmul(x, w) + b;
};

}  // namespace

TEST_CASE("the runner reports torchscript, the libtorch version and compat 1", "[torchscript]") {
  auto r = Run("'" + RunnerBin() + "' info");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"torchscript\"") != std::string::npos);
  CHECK(r.out.find("\"" + carton::torchscript::FrameworkVersion() + "\"") != std::string::npos);
  // Debian 12's libtorch-dev is 1.13.1 (its headers say 1.13.0).
  CHECK(carton::torchscript::FrameworkVersion() == "1.13.1");
}

TEST_CASE("a packed TorchScript model passes its self-test", "[torchscript]") {
  for (const char* compression : {"stored", "zstd"}) {
    DYNAMIC_SECTION(compression) {
      TempDir tmp;
      LinearCase c;
      ModelDir model(tmp, c.module, kLinearSpec + Runner(), {Value("x", c.x), Value("y", c.y)});
      std::string carton = Pack(tmp, model, compression);
      auto r = Run(Env(tmp) + CartonBin() + " self-test '" + carton + "'");
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out.find("three rows") != std::string::npos);
    }
  }
}

TEST_CASE("a changed expected output fails the self-test", "[torchscript]") {
  TempDir tmp;
  LinearCase c;
  at::Tensor wrong = c.y.clone();
  wrong[1][2] += 0.25;
  ModelDir model(tmp, c.module, kLinearSpec + Runner(), {Value("x", c.x), Value("y", wrong)});
  std::string carton = Pack(tmp, model, "stored");
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + carton + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK((r.out + r.err).find("FAIL y: 1 of 9 elements differ") != std::string::npos);
}

TEST_CASE("framework requirements select the runner by its version", "[torchscript]") {
  for (const char* req : {"=1.13.1", ">=1.12, <2", "^1.13"}) {
    DYNAMIC_SECTION("accepted: " << req) {
      TempDir tmp;
      LinearCase c;
      ModelDir model(tmp, c.module, kLinearSpec + Runner(req), {Value("x", c.x), Value("y", c.y)});
      auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
    }
  }
  SECTION("refused: >=2.0.0") {
    TempDir tmp;
    LinearCase c;
    ModelDir model(tmp, c.module, kLinearSpec + Runner(">=2.0.0"),
                   {Value("x", c.x), Value("y", c.y)});
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(">=2.0.0") != std::string::npos);
    CHECK(r.err.find(carton::torchscript::FrameworkVersion()) != std::string::npos);
  }
}

TEST_CASE("dict input and dict output are matched by name", "[torchscript]") {
  TempDir tmp;
  torch::jit::Module m("Dict");
  m.define(R"(
def forward(self, inputs: Dict[str, Tensor]) -> Dict[str, Tensor]:
    return {"sum": inputs["a"] + inputs["b"], "diff": inputs["a"] - inputs["b"]}
)");
  at::Tensor a = torch::tensor({1.0, 2.0, 3.0}, torch::kFloat64);
  at::Tensor b = torch::tensor({0.5, 0.25, 8.0}, torch::kFloat64);
  std::string spec = R"(spec_version = 1
[[input]]
name = "a"
dtype = "float64"
shape = [3]
[[input]]
name = "b"
dtype = "float64"
shape = [3]
[[self_test]]
inputs = { a = "@tensor_data/a", b = "@tensor_data/b" }
expected_out = { sum = "@tensor_data/sum", diff = "@tensor_data/diff" }
)";
  ModelDir model(tmp, m, spec + Runner(),
                 {Value("a", a), Value("b", b), Value("sum", a + b), Value("diff", a - b)});
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "zstd") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("positional arguments follow the declared inputs, and a tuple is named by the outputs",
          "[torchscript]") {
  TempDir tmp;
  torch::jit::Module m("Tuple");
  // Arguments named unlike the inputs: only the declared order matters.
  m.define(R"(
def forward(self, first: Tensor, second: Tensor) -> Tuple[Tensor, Tensor]:
    return (first - second, first * second)
)");
  at::Tensor p = torch::tensor({4, 5, 6}, torch::kInt32);
  at::Tensor q = torch::tensor({1, 2, 3}, torch::kInt32);
  std::string spec = R"(spec_version = 1
[[input]]
name = "p"
dtype = "int32"
shape = ["n"]
[[input]]
name = "q"
dtype = "int32"
shape = ["n"]
[[output]]
name = "difference"
dtype = "int32"
shape = ["n"]
[[output]]
name = "product"
dtype = "int32"
shape = ["n"]
[[self_test]]
inputs = { p = "@tensor_data/p", q = "@tensor_data/q" }
expected_out = { difference = "@tensor_data/d", product = "@tensor_data/m" }
)";
  ModelDir model(tmp, m, spec + Runner(),
                 {Value("p", p), Value("q", q), Value("d", p - q), Value("m", p * q)});
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("string tensors pass as List[str]", "[torchscript]") {
  TempDir tmp;
  torch::jit::Module m("Words");
  m.define(R"(
def forward(self, words: List[str]) -> List[str]:
    return [w + "!" for w in words]
)");
  std::string spec = R"(spec_version = 1
[[input]]
name = "words"
dtype = "string"
shape = ["n"]
[[output]]
name = "shouted"
dtype = "string"
shape = ["n"]
[[self_test]]
inputs = { words = "@tensor_data/words" }
expected_out = { shouted = "@tensor_data/shouted" }
)";
  ModelDir model(
      tmp, m, spec + Runner(),
      {Strings("words", {"hello", "wörld", ""}), Strings("shouted", {"hello!", "wörld!", "!"})});
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "zstd") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("every numeric carton dtype goes through torch and back", "[torchscript]") {
  TempDir tmp;
  struct Kind {
    const char* name;
    DataType type;
    c10::ScalarType torch;  // how the test builds the values
  };
  const std::vector<Kind> kinds = {
      {"float32", DataType::kFloat32, torch::kFloat32},
      {"float64", DataType::kFloat64, torch::kFloat64},
      {"int8", DataType::kInt8, torch::kInt8},
      {"int16", DataType::kInt16, torch::kInt16},
      {"int32", DataType::kInt32, torch::kInt32},
      {"int64", DataType::kInt64, torch::kInt64},
      {"uint8", DataType::kUint8, torch::kUInt8},
      {"uint16", DataType::kUint16, torch::kInt16},
      {"uint32", DataType::kUint32, torch::kInt32},
      {"uint64", DataType::kUint64, torch::kInt64},
  };
  std::string args, body, spec = "spec_version = 1\n", ins, outs;
  std::vector<TensorValue> tensors;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const auto& k = kinds[i];
    const std::string n = std::to_string(i);
    args += (i ? ", " : "") + std::string("a") + n + ": Tensor";
    body += (i ? ", " : "") + std::string("a") + n + " + a" + n;
    spec += "[[input]]\nname = \"in_" + std::string(k.name) + "\"\ndtype = \"" + k.name +
            "\"\nshape = [2, 2]\n";
    // Small non-negative values: the same bytes in the signed stand-ins.
    at::Tensor v = torch::tensor({1, 7, 20, 60}, k.torch).reshape({2, 2});
    tensors.push_back(Value("in_" + std::string(k.name), v, k.type));
    tensors.push_back(Value("out_" + std::string(k.name), v + v, k.type));
    ins += std::string(i ? ", " : "") + "in_" + k.name + " = \"@tensor_data/in_" + k.name + "\"";
    outs += std::string(i ? ", " : "") + "out_" + k.name + " = \"@tensor_data/out_" + k.name + "\"";
  }
  for (const auto& k : kinds) {
    spec += "[[output]]\nname = \"out_" + std::string(k.name) + "\"\ndtype = \"" + k.name +
            "\"\nshape = [2, 2]\n";
  }
  spec += "[[self_test]]\ninputs = { " + ins + " }\nexpected_out = { " + outs + " }\n";
  torch::jit::Module m("AllTypes");
  std::string tuple_type = "Tuple[";
  for (std::size_t i = 0; i < kinds.size(); ++i)
    tuple_type += (i ? ", " : "") + std::string("Tensor");
  m.define("def forward(self, " + args + ") -> " + tuple_type + "]:\n    return (" + body + ")\n");
  ModelDir model(tmp, m, spec + Runner(), tensors);
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("inputs that break the declared dtype or shape fail before the model runs",
          "[torchscript]") {
  TempDir tmp;
  LinearCase c;
  ModelDir model(tmp, c.module, kLinearSpec + Runner(), {Value("x", c.x), Value("y", c.y)});
  std::string carton = Pack(tmp, model, "stored");
  auto infer = [&](const at::Tensor& x) {
    at::Tensor t = x.contiguous();
    carton::safetensors::TensorSource src;
    src.name = "x";
    src.dtype = *carton::ToSafetensorsDtype(TypeOf(t));
    src.shape = Shape(t);
    src.bytes = carton::ByteView(static_cast<const std::byte*>(t.data_ptr()), t.nbytes());
    std::vector<carton::safetensors::TensorSource> one{src};
    REQUIRE(carton::safetensors::WriteFile(tmp.file("in.safetensors"), one).ok());
    return Run(Env(tmp) + CartonBin() + " infer '" + carton + "' --input x=" +
               tmp.file("in.safetensors") + " --output " + tmp.file("out.safetensors"));
  };
  SECTION("the right input runs") {
    auto r = infer(c.x);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(tmp.file("out.safetensors")));
  }
  SECTION("float64 instead of float32") {
    auto r = infer(c.x.to(torch::kFloat64));
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("input \"x\": dtype float64, not float32") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.file("out.safetensors")));
  }
  SECTION("a wrong fixed dimension") {
    auto r = infer(torch::ones({3, 5}));
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("dimension 1 is 5, not 4") != std::string::npos);
  }
}

TEST_CASE("runner opts: model_path, thread counts, unknown opts warned about", "[torchscript]") {
  TempDir tmp;
  LinearCase c;
  ModelDir model(tmp, c.module,
                 kLinearSpec + Runner("=1.13.1",
                                      "model_path = \"nested/linear.pt\"\nnum_threads = 3\n"
                                      "num_interop_threads = 2\nfancy = true\n"),
                 {Value("x", c.x), Value("y", c.y)}, "nested/linear.pt");
  // The runner itself, so its stderr is seen as it writes it.
  auto r = Run(Env(tmp) + "'" + RunnerBin() + "' self-test '" + Pack(tmp, model, "stored") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("torch uses 3 intra-op threads") != std::string::npos);
  CHECK(r.err.find("torch uses 2 inter-op threads") != std::string::npos);
  CHECK(r.err.find("unknown runner opt \"fancy\"") != std::string::npos);
}

TEST_CASE("model_path may not leave model/", "[torchscript]") {
  TempDir tmp;
  LinearCase c;
  ModelDir model(tmp, c.module,
                 kLinearSpec + Runner("=1.13.1", "model_path = \"../carton.toml\"\n"),
                 {Value("x", c.x), Value("y", c.y)});
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("leaves model/") != std::string::npos);
}

namespace {

// Peak resident memory (KiB) of `argv` run as a child process.
long PeakRssKib(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return usage.ru_maxrss;
}

}  // namespace

TEST_CASE("a stored model's weights are copied at most once on load", "[torchscript]") {
  // 8M float32 parameters (32 MiB) against a tiny model: the runner's peak
  // memory may grow by one copy of the weights, not two.
  auto measure = [](std::int64_t in, std::int64_t out) {
    TempDir tmp;
    at::Tensor w = torch::randn({in, out}) / 100;
    at::Tensor b = torch::zeros({out});
    at::Tensor x = torch::ones({1, in});
    torch::jit::Module m = Linear(w, b);
    std::string spec =
        "spec_version = 1\n[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n"
        "expected_out = { output = \"@tensor_data/y\" }\n";
    ModelDir model(tmp, m, spec + Runner(), {Value("x", x), Value("y", torch::matmul(x, w) + b)});
    std::string carton = Pack(tmp, model, "stored");
    std::vector<std::string> env = {"CARTON_CACHE_DIR=" + tmp.file("cache")};
    // The first run fills the cache; the second is the load being measured.
    PeakRssKib({RunnerBin(), "self-test", carton}, env);
    return PeakRssKib({RunnerBin(), "self-test", carton}, env);
  };
  const long tiny = measure(4, 4);
  const long big = measure(4096, 2048);
  const long weights_kib = 4096L * 2048 * 4 / 1024;
  INFO("peak RSS tiny " << tiny << " KiB, big " << big << " KiB, weights " << weights_kib
                        << " KiB");
  CHECK(big - tiny >= weights_kib / 2);  // the weights really are loaded
  CHECK(big - tiny < weights_kib * 3 / 2);
}
