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
#include <string>
#include <vector>
// glog (through torch) defines CHECK; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "carton/safetensors/writer.h"
#include "carton/torchscript/torchscript_runner.h"
#include "torchscript/torchscript_testing.h"

namespace fs = std::filesystem;
using carton::DataType;
using carton::ExportSafetensors;
using carton::TensorData;
using carton::TensorValue;
using carton::WriteTensorDataDir;
using carton::testing::CartonBin;
using carton::testing::Run;
using carton::testing::TempDir;
using carton::torchscript::testing::Env;
using carton::torchscript::testing::ModelDir;
using carton::torchscript::testing::Pack;
using carton::torchscript::testing::Runner;
using carton::torchscript::testing::RunnerBin;
using carton::torchscript::testing::Shape;
using carton::torchscript::testing::String;
using carton::torchscript::testing::Strings;
using carton::torchscript::testing::TypeOf;
using carton::torchscript::testing::Value;

namespace {

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

TEST_CASE("torchscript: the runner reports torchscript, the libtorch version and compat 1",
          "[torchscript]") {
  auto r = Run("'" + RunnerBin() + "' info");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"torchscript\"") != std::string::npos);
  CHECK(r.out.find("\"" + carton::torchscript::FrameworkVersion() + "\"") != std::string::npos);
  // Debian 12's libtorch-dev is 1.13.1 (its headers say 1.13.0).
  CHECK(carton::torchscript::FrameworkVersion() == "1.13.1");
}

TEST_CASE("torchscript: a packed TorchScript model passes its self-test", "[torchscript]") {
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

TEST_CASE("torchscript: a changed expected output fails the self-test", "[torchscript]") {
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

TEST_CASE("torchscript: framework requirements select the runner by its version", "[torchscript]") {
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

TEST_CASE("torchscript: dict input and dict output are matched by name", "[torchscript]") {
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

TEST_CASE(
    "torchscript: positional arguments follow the declared inputs, and a tuple is named by the "
    "outputs",
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

TEST_CASE("torchscript: string tensors pass as List[str]", "[torchscript]") {
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

TEST_CASE("torchscript: every numeric carton dtype goes through torch and back", "[torchscript]") {
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

TEST_CASE("torchscript: inputs that break the declared dtype or shape fail before the model runs",
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

TEST_CASE("torchscript: runner opts: model_path, thread counts, unknown opts warned about",
          "[torchscript]") {
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

TEST_CASE("torchscript: model_path may not leave model/", "[torchscript]") {
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

// The original implementation's calling convention: one Dict[str, Any] with
// a tensor, a str and a List[str], answered with a dict of the same kinds.
torch::jit::Module Greeter() {
  torch::jit::Module m("Greeter");
  m.define(R"(
def forward(self, inputs: Dict[str, Any]) -> Dict[str, Union[Tensor, List[str], str]]:
    x = inputs["x"]
    name = inputs["name"]
    words = inputs["words"]
    assert isinstance(x, Tensor)
    assert isinstance(name, str)
    assert isinstance(words, List[str])
    out: Dict[str, Union[Tensor, List[str], str]] = {}
    out["y"] = x * 2.0 + 1.0
    out["greeting"] = "hello " + name
    out["shouted"] = [w.upper() + "!" for w in words]
    return out
)");
  return m;
}

const char kGreeterSpec[] = R"(spec_version = 1
model_name = "greeter"
[[input]]
name = "x"
dtype = "float32"
shape = [2, 3]
[[input]]
name = "name"
dtype = "string"
shape = []
[[input]]
name = "words"
dtype = "string"
shape = ["n"]
[[output]]
name = "y"
dtype = "float32"
shape = [2, 3]
[[output]]
name = "greeting"
dtype = "string"
shape = []
[[output]]
name = "shouted"
dtype = "string"
shape = ["n"]
[[self_test]]
name = "strings and a tensor"
inputs = { x = "@tensor_data/x", name = "@tensor_data/name", words = "@tensor_data/words" }
expected_out = { y = "@tensor_data/y", greeting = "@tensor_data/greeting", shouted = "@tensor_data/shouted" }
)";

struct GreeterCase {
  at::Tensor x = torch::arange(6, torch::kFloat32).reshape({2, 3}) / 4;
  std::vector<TensorValue> Tensors(const std::string& greeting,
                                   const std::vector<std::string>& shouted) const {
    return {Value("x", x),
            String("name", "wörld"),
            Strings("words", {"a", "bc", ""}),
            Value("y", x * 2.0 + 1.0),
            String("greeting", greeting),
            Strings("shouted", shouted)};
  }
};

}  // namespace

TEST_CASE("torchscript: Dict[str, Any]: a tensor, a str and a List[str] in, the same kinds out",
          "[torchscript]") {
  for (const char* compression : {"stored", "zstd"}) {
    DYNAMIC_SECTION(compression) {
      TempDir tmp;
      GreeterCase c;
      torch::jit::Module m = Greeter();
      ModelDir model(tmp, m, kGreeterSpec + Runner(), c.Tensors("hello wörld", {"A!", "BC!", "!"}));
      auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, compression) + "'");
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out.find("PASS strings and a tensor") != std::string::npos);
      CHECK(r.out.find("ok   greeting: all 1 strings match") != std::string::npos);
      CHECK(r.out.find("ok   shouted: all 3 strings match") != std::string::npos);
      CHECK(r.out.find("ok   y") != std::string::npos);
    }
  }
}

TEST_CASE(
    "torchscript: Dict[str, Any]: a wrong expected string fails the self-test, naming the output",
    "[torchscript]") {
  SECTION("a str") {
    TempDir tmp;
    GreeterCase c;
    torch::jit::Module m = Greeter();
    ModelDir model(tmp, m, kGreeterSpec + Runner(), c.Tensors("hello world", {"A!", "BC!", "!"}));
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("FAIL greeting: 1 of 1 strings differ; first at flat index 0: \"hello "
                     "wörld\" vs expected \"hello world\"") != std::string::npos);
    CHECK(r.out.find("ok   shouted") != std::string::npos);
  }
  SECTION("an element of a List[str]") {
    TempDir tmp;
    GreeterCase c;
    torch::jit::Module m = Greeter();
    ModelDir model(tmp, m, kGreeterSpec + Runner(), c.Tensors("hello wörld", {"A!", "BC", "!"}));
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("FAIL shouted: 1 of 3 strings differ; first at flat index 1: \"BC!\" vs "
                     "expected \"BC\"") != std::string::npos);
    CHECK(r.out.find("ok   greeting") != std::string::npos);
  }
}

TEST_CASE("torchscript: a dict of inputs of another value type gets what that type can hold",
          "[torchscript]") {
  // Keys are internal names where carton.toml gives them, for inputs and outputs.
  const std::string spec = R"(spec_version = 1
[[input]]
name = "x"
internal_name = "features"
dtype = "int64"
shape = [3]
[[input]]
name = "tag"
dtype = "string"
shape = []
[[output]]
name = "labelled"
internal_name = "out"
dtype = "string"
shape = [3]
[[self_test]]
inputs = { x = "@tensor_data/x", tag = "@tensor_data/tag" }
expected_out = { labelled = "@tensor_data/labelled" }
)";
  const std::vector<TensorValue> tensors = {Value("x", torch::tensor({3, 1, 2}, torch::kInt64)),
                                            String("tag", "n"),
                                            Strings("labelled", {"n3", "n1", "n2"})};
  SECTION("Dict[str, Union[Tensor, str, List[str]]] takes a tensor and a str") {
    TempDir tmp;
    torch::jit::Module m("Labeller");
    m.define(R"(
def forward(self, inputs: Dict[str, Union[Tensor, str, List[str]]]) -> Dict[str, List[str]]:
    x = inputs["features"]
    tag = inputs["tag"]
    assert isinstance(x, Tensor)
    assert isinstance(tag, str)
    values: List[int] = x.tolist()
    labels: List[str] = []
    for v in values:
        labels.append(tag + str(v))
    return {"out": labels}
)");
    ModelDir model(tmp, m, spec + Runner(), tensors);
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("Dict[str, Union[Tensor, List[str]]] cannot take a str") {
    TempDir tmp;
    torch::jit::Module m("NoStr");
    m.define(R"(
def forward(self, inputs: Dict[str, Union[Tensor, List[str]]]) -> Dict[str, List[str]]:
    return {"out": ["unused"]}
)");
    ModelDir model(tmp, m, spec + Runner(), tensors);
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("input \"tag\": forward takes Dict[str, Union[Tensor, List[str]]], which "
                     "cannot hold a str (a string tensor of rank 0)") != std::string::npos);
  }
}

TEST_CASE("torchscript: Dict[str, Tensor] refuses a string input with a clear error",
          "[torchscript]") {
  TempDir tmp;
  torch::jit::Module m("Tensors");
  m.define(R"(
def forward(self, inputs: Dict[str, Tensor]) -> Dict[str, Tensor]:
    return {"y": inputs["x"]}
)");
  const std::string spec = R"(spec_version = 1
[[self_test]]
inputs = { x = "@tensor_data/x", words = "@tensor_data/words" }
expected_out = { y = "@tensor_data/x" }
)";
  ModelDir model(tmp, m, spec + Runner(),
                 {Value("x", torch::ones({2})), Strings("words", {"a", "b"})});
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("input \"words\": forward takes Dict[str, Tensor], which cannot hold a string "
                   "tensor; declare forward(self, inputs: Dict[str, Any]) to receive strings") !=
        std::string::npos);
}

TEST_CASE("torchscript: a dict of inputs with keys other than str is refused on load",
          "[torchscript]") {
  TempDir tmp;
  torch::jit::Module m("IntKeys");
  m.define(R"(
def forward(self, inputs: Dict[int, Tensor]) -> Tensor:
    return inputs[0]
)");
  LinearCase c;
  ModelDir model(tmp, m, kLinearSpec + Runner(), {Value("x", c.x), Value("y", c.y)});
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("forward takes Dict[int, Tensor]; a dict of inputs must have str keys") !=
        std::string::npos);
}

TEST_CASE("torchscript: the model file is model_path, else model.pt, and a missing one is named",
          "[torchscript]") {
  LinearCase c;
  SECTION("without model_path, model/model.pt is loaded") {
    TempDir tmp;
    ModelDir model(tmp, c.module, kLinearSpec + Runner(), {Value("x", c.x), Value("y", c.y)});
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("without model_path and without model.pt") {
    TempDir tmp;
    ModelDir model(tmp, c.module, kLinearSpec + Runner(), {Value("x", c.x), Value("y", c.y)},
                   "weights/linear.pt");
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("the TorchScript model model/model.pt does not exist (the default when "
                     "runner opt \"model_path\" is not set; model/ holds "
                     "model/weights/linear.pt)") != std::string::npos);
  }
  SECTION("model_path names a missing file") {
    TempDir tmp;
    ModelDir model(tmp, c.module, kLinearSpec + Runner("=1.13.1", "model_path = \"gone.pt\"\n"),
                   {Value("x", c.x), Value("y", c.y)});
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("runner opt \"model_path\" names model/gone.pt, which does not exist "
                     "(model/ holds model/model.pt)") != std::string::npos);
  }
  SECTION("model_path names a directory") {
    TempDir tmp;
    ModelDir model(tmp, c.module, kLinearSpec + Runner("=1.13.1", "model_path = \"sub\"\n"),
                   {Value("x", c.x), Value("y", c.y)}, "sub/inner.pt");
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("runner opt \"model_path\" names model/sub, which is not a file") !=
          std::string::npos);
  }
  SECTION("a file that is not TorchScript") {
    TempDir tmp;
    ModelDir model(tmp, c.module, kLinearSpec + Runner(), {Value("x", c.x), Value("y", c.y)});
    carton::torchscript::testing::WriteText(model.dir / "model" / "model.pt", "not a zip");
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("cannot load TorchScript model model/model.pt") != std::string::npos);
  }
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

TEST_CASE("torchscript: a stored model's weights are copied at most once on load",
          "[torchscript]") {
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

// The first-day journeys with a TorchScript file: packed alone, and used
// from the flat folder `carton init` writes (carton.toml, tensor_data/ and
// misc/ beside model.pt).
TEST_CASE("torchscript: a single .pt packs into a carton that runs", "[torchscript][first-day]") {
  TempDir tmp;
  LinearCase c;
  const std::string pt = tmp.file("mlp.pt");
  c.module.save(pt);
  TensorData inputs;
  inputs.tensors = {Value("x", c.x)};
  REQUIRE(WriteTensorDataDir(tmp.file("in"), inputs).ok());
  REQUIRE(ExportSafetensors(tmp.file("in"), tmp.file("x.safetensors")).ok());
  const std::string carton = tmp.file("m.carton");
  auto pack = Run(CartonBin() + " pack -q '" + pt + "' -o '" + carton +
                  "' --runner torchscript --framework-version '>=1.13' "
                  "--input 'x:float32:[batch,4]' --output-tensor 'y:float32:[batch,3]'");
  INFO(pack.err);
  REQUIRE(pack.exit_code == 0);
  auto ls = Run(CartonBin() + " ls '" + carton + "'");
  CHECK_THAT(ls.out, Catch::Contains("model/model.pt"));
  auto infer = Run(Env(tmp) + CartonBin() + " infer -q '" + carton + "' --input x='" +
                   tmp.file("x.safetensors") + "' --output '" + tmp.file("y.safetensors") + "'");
  INFO(infer.err);
  CHECK(infer.exit_code == 0);
  // A safetensors file alone: each tensor is the input of its name.
  auto by_name = Run(Env(tmp) + CartonBin() + " infer -q '" + carton + "' --input '" +
                     tmp.file("x.safetensors") + "' --output '" + tmp.file("y2.safetensors") + "'");
  INFO(by_name.err);
  CHECK(by_name.exit_code == 0);
  CHECK(carton::testing::ReadText(tmp.file("y2.safetensors")) ==
        carton::testing::ReadText(tmp.file("y.safetensors")));
}

TEST_CASE("torchscript: the flat folder carton init writes loads, runs and packs as it is",
          "[torchscript][first-day]") {
  TempDir tmp;
  LinearCase c;
  const auto dir = tmp.path() / "flat";
  std::filesystem::create_directories(dir / "misc");
  c.module.save((dir / "model.pt").string());
  carton::torchscript::testing::WriteText(dir / "carton.toml", kLinearSpec + Runner());
  carton::torchscript::testing::WriteText(dir / "misc" / "notes.txt", "notes\n");
  TensorData data;
  data.tensors = {Value("x", c.x), Value("y", c.y)};
  REQUIRE(WriteTensorDataDir((dir / "tensor_data").string(), data).ok());
  const std::string flat = dir.string();

  // load prints the folder itself: it holds the model's files.
  auto load = Run(Env(tmp) + CartonBin() + " load '" + flat + "'");
  INFO(load.err);
  CHECK(load.exit_code == 0);
  CHECK(load.out == std::filesystem::canonical(dir).string() + "\n");
  auto self_test = Run(Env(tmp) + CartonBin() + " self-test '" + flat + "'");
  INFO(self_test.out << self_test.err);
  CHECK(self_test.exit_code == 0);

  // pack keeps tensor_data/ and misc/ at the carton's root.
  const std::string carton = tmp.file("flat.carton");
  auto pack = Run(CartonBin() + " pack -q '" + flat + "' -o '" + carton + "'");
  INFO(pack.err);
  REQUIRE(pack.exit_code == 0);
  auto ls = Run(CartonBin() + " ls '" + carton + "'");
  CHECK_THAT(ls.out, Catch::Contains(" tensor_data/tensor_0.bin"));
  CHECK_THAT(ls.out, Catch::Contains(" misc/notes.txt"));
  CHECK_THAT(ls.out, Catch::Contains(" model/model.pt"));
  CHECK(ls.out.find("model/tensor_data") == std::string::npos);
  auto packed_test = Run(Env(tmp) + CartonBin() + " self-test '" + carton + "'");
  INFO(packed_test.out << packed_test.err);
  CHECK(packed_test.exit_code == 0);
}

TEST_CASE("torchscript: a model's own exception reaches the caller with its traceback",
          "[torchscript][first-day]") {
  TempDir tmp;
  // A model scripted by Python's torch, as users make them (C++'s define
  // cannot raise Python's exception types).
  const auto dir = tmp.path() / "raises";
  std::filesystem::create_directories(dir / "model");
  const std::string script =
      "import sys, torch\n"
      "class M(torch.nn.Module):\n"
      "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
      "        if bool(x.sum() > 0):\n"
      "            raise ValueError('x must be non-positive')\n"
      "        return x\n"
      "torch.jit.script(M()).save(sys.argv[1])\n";
  carton::torchscript::testing::WriteText(tmp.path() / "make.py", script);
  auto made = Run("/usr/bin/python3 '" + tmp.file("make.py") + "' '" +
                  (dir / "model" / "model.pt").string() + "'");
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  carton::torchscript::testing::WriteText(dir / "carton.toml", R"(spec_version = 1
[[input]]
name = "x"
dtype = "float32"
shape = [2]
)" + Runner());
  const std::string carton = tmp.file("raises.carton");
  REQUIRE(Run(CartonBin() + " pack -q '" + dir.string() + "' -o '" + carton + "'").exit_code == 0);
  TensorData in;
  in.tensors = {Value("x", torch::tensor({1.0f, 2.0f}))};
  REQUIRE(WriteTensorDataDir(tmp.file("in"), in).ok());
  REQUIRE(ExportSafetensors(tmp.file("in"), tmp.file("x.safetensors")).ok());
  auto r = Run(Env(tmp) + CartonBin() + " infer -q '" + carton + "' --input x='" +
               tmp.file("x.safetensors") + "' --output '" + tmp.file("y.safetensors") + "'");
  CHECK(r.exit_code == 3);  // the model's own code failed
  CHECK_THAT(r.err, Catch::Contains("the TorchScript model raised"));
  CHECK_THAT(r.err, Catch::Contains("ValueError: x must be non-positive"));
  CHECK_THAT(r.err, Catch::Contains("Traceback of TorchScript"));
  auto j = Run(Env(tmp) + CartonBin() + " infer -q --json '" + carton + "' --input x='" +
               tmp.file("x.safetensors") + "' --output '" + tmp.file("y.safetensors") + "'");
  CHECK(j.exit_code == 3);
  CHECK_THAT(j.out, Catch::Contains(R"("code":"model_error")"));
  CHECK_THAT(j.out, Catch::Contains(
                        R"("exception":{"type":"ValueError","message":"x must be non-positive"})"));
  CHECK_FALSE(std::filesystem::exists(tmp.file("y.safetensors")));
}

TEST_CASE("torchscript: a torch.save pickle is named as such, with how to save TorchScript",
          "[torchscript][first-day]") {
  TempDir tmp;
  const auto dir = tmp.path() / "pickled";
  std::filesystem::create_directories(dir / "model");
  carton::torchscript::testing::WriteText(tmp.path() / "make.py",
                                          "import sys, torch\n"
                                          "class M(torch.nn.Module):\n"
                                          "    def forward(self, x):\n"
                                          "        return x * 2\n"
                                          "torch.save(M(), sys.argv[1])\n");
  auto made = Run("/usr/bin/python3 '" + tmp.file("make.py") + "' '" +
                  (dir / "model" / "model.pt").string() + "'");
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  carton::torchscript::testing::WriteText(dir / "carton.toml", "spec_version = 1\n" + Runner());
  const std::string carton = tmp.file("pickled.carton");
  REQUIRE(Run(CartonBin() + " pack -q '" + dir.string() + "' -o '" + carton + "'").exit_code == 0);
  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + carton + "'");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("was written by torch.save"));
  CHECK_THAT(r.err, Catch::Contains("torch.jit.script(model).save(path)"));
}
