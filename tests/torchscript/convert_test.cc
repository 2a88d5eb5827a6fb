// What a TorchScript model may return, end to end through `carton
// self-test` and `carton infer` (real runner processes): tensors, strings,
// lists of strings and Python scalars convert; every other value is an
// error naming the output and its TorchScript type, and the runner keeps
// serving after it.
#include <torch/script.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>
// glog (through torch) defines CHECK; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "carton/safetensors/writer.h"
#include "torchscript/torchscript_testing.h"

using carton::DataType;
using carton::TensorValue;
using carton::testing::CartonBin;
using carton::testing::Run;
using carton::testing::TempDir;
using carton::torchscript::testing::Env;
using carton::torchscript::testing::ModelDir;
using carton::torchscript::testing::Pack;
using carton::torchscript::testing::Runner;
using carton::torchscript::testing::RunnerBin;
using carton::torchscript::testing::String;
using carton::torchscript::testing::Strings;
using carton::torchscript::testing::Value;

TEST_CASE("torchscript: outputs: Python scalars are rank-0 int64, float64 and uint8 tensors",
          "[torchscript]") {
  const at::Tensor x = torch::tensor({0.5f, 1.5f, 2.5f, 3.5f});
  SECTION("in a dict, with a bool tensor and a list of strings typed List[Any]") {
    TempDir tmp;
    torch::jit::Module m("Stats");
    m.define(R"(
def forward(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
    x = inputs["x"]
    assert isinstance(x, Tensor)
    names: List[Any] = ["low", "high"]
    out: Dict[str, Any] = {}
    out["count"] = x.numel()
    out["mean"] = float(x.mean())
    out["positive"] = bool(x.min() > 0)
    out["negative"] = bool(x.max() < 0)
    out["mask"] = x > 1.0
    out["names"] = names
    return out
)");
    const std::string spec = R"(spec_version = 1
[[self_test]]
inputs = { x = "@tensor_data/x" }
expected_out = { count = "@tensor_data/count", mean = "@tensor_data/mean", positive = "@tensor_data/positive", negative = "@tensor_data/negative", mask = "@tensor_data/mask", names = "@tensor_data/names" }
)";
    ModelDir model(tmp, m, spec + Runner(),
                   {Value("x", x), Value("count", torch::scalar_tensor(4, torch::kInt64)),
                    Value("mean", torch::scalar_tensor(2.0, torch::kFloat64)),
                    Value("positive", torch::scalar_tensor(1, torch::kUInt8)),
                    Value("negative", torch::scalar_tensor(0, torch::kUInt8)),
                    Value("mask", torch::tensor({0, 1, 1, 1}, torch::kUInt8)),
                    Strings("names", {"low", "high"})});
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "stored") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    for (const char* name : {"count", "mean", "positive", "negative", "mask", "names"}) {
      CHECK(r.out.find("ok   " + std::string(name)) != std::string::npos);
    }
  }
  SECTION("in a tuple, named by the declared outputs") {
    TempDir tmp;
    torch::jit::Module m("TupleStats");
    m.define(R"(
def forward(self, x: Tensor) -> Tuple[int, float, bool, str]:
    return (x.numel(), float(x.sum()), bool(x.min() > 0), "done")
)");
    const std::string spec = R"(spec_version = 1
[[input]]
name = "x"
dtype = "float32"
shape = [4]
[[output]]
name = "count"
dtype = "int64"
shape = []
[[output]]
name = "total"
dtype = "float64"
shape = []
[[output]]
name = "positive"
dtype = "uint8"
shape = []
[[output]]
name = "status"
dtype = "string"
shape = []
[[self_test]]
inputs = { x = "@tensor_data/x" }
expected_out = { count = "@tensor_data/count", total = "@tensor_data/total", positive = "@tensor_data/positive", status = "@tensor_data/status" }
)";
    ModelDir model(
        tmp, m, spec + Runner(),
        {Value("x", x), Value("count", torch::scalar_tensor(4, torch::kInt64)),
         Value("total", torch::scalar_tensor(8.0, torch::kFloat64)),
         Value("positive", torch::scalar_tensor(1, torch::kUInt8)), String("status", "done")});
    auto r = Run(Env(tmp) + CartonBin() + " self-test '" + Pack(tmp, model, "zstd") + "'");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
  }
}

namespace {

// A model that returns, depending on its `mode` input, one kind of value
// under "out" (or as its whole result).
torch::jit::Module Returner() {
  torch::jit::Module m("Returner");
  m.define(R"(
def forward(self, inputs: Dict[str, Any]) -> Any:
    mode = inputs["mode"]
    assert isinstance(mode, str)
    x = torch.ones([2])
    if mode == "int keys":
        return {1: x}
    if mode == "none at the top":
        return None
    out: Dict[str, Any] = {}
    if mode == "nested dict":
        out["out"] = {"inner": x}
    elif mode == "ints and strings":
        mixed: List[Union[int, str]] = [1, "a"]
        out["out"] = mixed
    elif mode == "none":
        out["out"] = None
    elif mode == "tuple":
        out["out"] = (x, x)
    elif mode == "ints":
        out["out"] = [1, 2]
    elif mode == "empty ints":
        empty: List[int] = []
        out["out"] = empty
    elif mode == "tensors":
        out["out"] = [x, x]
    elif mode == "strings and none":
        maybe: List[Optional[str]] = ["a", None]
        out["out"] = maybe
    elif mode == "half":
        out["out"] = x.half()
    elif mode == "complex":
        out["out"] = torch.complex(x, x)
    elif mode == "sparse":
        out["out"] = x.to_sparse()
    else:
        out["out"] = x
    return out
)");
  return m;
}

// The line of `text` that starts with `prefix`, or "".
std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

struct Refused {
  const char* mode;
  const char* message;
};

const std::vector<Refused> kRefused = {
    {"nested dict", "output \"out\": the model returned Dict[str, Tensor]; an output must be"},
    {"ints and strings", "output \"out\": the model returned List[Union[int, str]]; an output"},
    {"none", "output \"out\": the model returned NoneType; an output must be"},
    {"tuple", "output \"out\": the model returned Tuple[Tensor, Tensor]; an output must be"},
    {"ints", "output \"out\": the model returned List[int]; an output must be"},
    {"empty ints", "output \"out\": the model returned List[int]; an output must be"},
    {"tensors", "output \"out\": the model returned List[Tensor]; an output must be"},
    {"strings and none", "output \"out\": the model returned List[Optional[str]]; an output"},
    {"half",
     "output \"out\": the model returned a tensor of torch type Half, which has no carton "
     "dtype"},
    {"complex",
     "output \"out\": the model returned a tensor of torch type ComplexFloat, which "
     "has no carton dtype"},
    {"sparse",
     "output \"out\": the model returned a tensor of layout Sparse; only dense "
     "(strided) tensors convert"},
    {"int keys",
     "the model returned Dict[int, Tensor]; the keys of a dict of outputs must be "
     "str (the output names)"},
    {"none at the top", "output \"output\": the model returned NoneType; an output must be"},
};

}  // namespace

TEST_CASE("torchscript: outputs: every other value is an error naming the output and its type",
          "[torchscript]") {
  // One carton, one runner process: a self-test per refused value, each
  // failing with its message, and a last one that passes, answered by the
  // same runner after all the others.
  TempDir tmp;
  std::string spec = "spec_version = 1\n";
  std::vector<TensorValue> tensors = {Value("good", torch::ones({2})), String("mode_good", "good")};
  for (std::size_t i = 0; i < kRefused.size(); ++i) {
    const std::string mode = "mode_" + std::to_string(i);
    tensors.push_back(String(mode, kRefused[i].mode));
    spec += "[[self_test]]\nname = \"" + std::string(kRefused[i].mode) +
            "\"\ninputs = { mode = " + "\"@tensor_data/" + mode +
            "\" }\nexpected_out = { out = \"@tensor_data/good\" }\n";
  }
  spec +=
      "[[self_test]]\nname = \"a tensor\"\ninputs = { mode = \"@tensor_data/mode_good\" }\n"
      "expected_out = { out = \"@tensor_data/good\" }\n";
  torch::jit::Module m = Returner();
  ModelDir model(tmp, m, spec + Runner(), tensors);
  const std::string carton = Pack(tmp, model, "stored");

  auto r = Run(Env(tmp) + CartonBin() + " self-test '" + carton + "'");
  INFO(r.out << r.err);
  // A verdict on the model (1), not a runner in trouble (2).
  CHECK(r.exit_code == 1);
  for (const auto& refused : kRefused) {
    // The caller puts "runner <path>: " before what the runner says.
    const std::string line = LineStartingWith(r.out, "FAIL " + std::string(refused.mode) + ": ");
    INFO(refused.mode << ": " << line);
    CHECK(line.find(": inference failed: runner ") != std::string::npos);
    CHECK(line.find(refused.message) != std::string::npos);
  }
  CHECK(r.out.find("PASS a tensor") != std::string::npos);
  CHECK(r.out.find("1 of " + std::to_string(kRefused.size() + 1) + " self-tests passed") !=
        std::string::npos);
  CHECK(r.err.find("crash") == std::string::npos);
  CHECK(r.err.find("signal") == std::string::npos);
}

TEST_CASE("torchscript: outputs: carton infer and the runner's infer exit 1 on a refused output",
          "[torchscript]") {
  TempDir tmp;
  torch::jit::Module m("Nested");
  m.define(R"(
def forward(self, x: Tensor) -> Dict[str, Dict[str, Tensor]]:
    return {"out": {"inner": x}}
)");
  const std::string spec = "spec_version = 1\n";
  ModelDir model(tmp, m, spec + Runner(), {Value("x", torch::ones({2}))});
  const std::string carton = Pack(tmp, model, "stored");
  const at::Tensor x = torch::ones({2});
  carton::safetensors::TensorSource src;
  src.name = "x";
  src.dtype = carton::safetensors::Dtype::kF32;
  src.shape = {2};
  src.bytes = carton::ByteView(static_cast<const std::byte*>(x.data_ptr()), x.nbytes());
  std::vector<carton::safetensors::TensorSource> one{src};
  REQUIRE(carton::safetensors::WriteFile(tmp.file("in.safetensors"), one).ok());
  const std::string args = " infer '" + carton + "' --input x=" + tmp.file("in.safetensors") +
                           " --output " + tmp.file("out.safetensors");
  const std::string message =
      "output \"out\": the model returned Dict[str, Tensor]; an output must be a tensor, a str, "
      "a List[str] (or a list holding only strings), or an int, float or bool";

  auto r = Run(Env(tmp) + CartonBin() + args);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("carton infer: runner ") == 0);
  CHECK(r.err.find(message) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.file("out.safetensors")));

  auto direct = Run(Env(tmp) + "'" + RunnerBin() + "'" + args);
  INFO(direct.out << direct.err);
  CHECK(direct.exit_code == 1);
  CHECK(direct.err.find("carton-runner-torchscript infer: " + message) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.file("out.safetensors")));
}
