// The Python runner as a real process, through `carton` and on its own:
// identity and selection, Python models written here (numpy, and torch
// when Debian's python3-torch is installed), strings, seal and
// infer_with_handle, opts, errors with tracebacks, kept inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/format/semver.h"
#include "carton/runner/runner.h"
#include "carton/runner/tensor_file.h"
#include "carton/safetensors/writer.h"
#include "python_runner/python_runner_testing.h"

using namespace carton;
using namespace carton::testing;
namespace fs = std::filesystem;

namespace {

constexpr char kNumpyModel[] = R"PY(import numpy as np


class Model:
    def __init__(self, scale=1.0):
        self.scale = scale

    def infer_with_tensors(self, tensors):
        x = tensors["x"]
        labels = tensors["labels"]
        return {
            "y": (x * self.scale + 1).astype(np.float32),
            "upper": np.array([s.upper() for s in labels.flat]).reshape(labels.shape),
            "first": labels.flat[0],
            "count": len(labels),
            "flags": np.array([x.flags.writeable, x.flags.owndata, labels.dtype == object]),
        }


def get_model(scale=1.0):
    return Model(scale)
)PY";

// Inputs x (float32 [4]) and labels (string [2]); the outputs kNumpyModel
// gives with scale 2.
std::string NumpyConfig() {
  return "spec_version = 1\n"
         "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [4]\n"
         "[[input]]\nname = \"labels\"\ndtype = \"string\"\nshape = [2]\n"
         "[[output]]\nname = \"y\"\ndtype = \"float32\"\nshape = [4]\n"
         "[[output]]\nname = \"upper\"\ndtype = \"string\"\nshape = [2]\n"
         "[[output]]\nname = \"first\"\ndtype = \"string\"\nshape = []\n"
         "[[output]]\nname = \"count\"\ndtype = \"int32\"\nshape = []\n"
         "[[output]]\nname = \"flags\"\ndtype = \"uint8\"\nshape = [3]\n"
         "[[self_test]]\nname = \"numbers-and-strings\"\n"
         "inputs = { x = \"@tensor_data/x\", labels = \"@tensor_data/labels\" }\n"
         "expected_out = { y = \"@tensor_data/y\", upper = \"@tensor_data/upper\", "
         "first = \"@tensor_data/first\", count = \"@tensor_data/count\", "
         "flags = \"@tensor_data/flags\" }\n" +
         PythonRunnerToml("\"model.scale\" = 2.0\n");
}

TensorData NumpyData(const std::string& first_expected = "alpha") {
  TensorData d;
  d.tensors.push_back(Float32("x", {4}, {1, 2, 3, 4}));
  d.tensors.push_back({"labels", DataType::kString, {2}, {}, {"alpha", "beta"}});
  d.tensors.push_back(Float32("y", {4}, {3, 5, 7, 9}));
  d.tensors.push_back({"upper", DataType::kString, {2}, {}, {"ALPHA", "BETA"}});
  d.tensors.push_back({"first", DataType::kString, {}, {}, {first_expected}});
  d.tensors.push_back({"count",
                       DataType::kInt32,
                       {},
                       EncodeNumeric<std::int32_t>(std::vector<std::int32_t>{2}),
                       {}});
  // x is a read-only view (not writeable, not owning), labels an object array.
  d.tensors.push_back(
      {"flags", DataType::kUint8, {3}, {std::byte{0}, std::byte{0}, std::byte{1}}, {}});
  return d;
}

// A float32 input file for `carton infer`.
std::string InputFile(const std::string& path, const std::vector<float>& values) {
  auto t =
      carton::Tensor::Owned("x", DataType::kFloat32, {values.size()}, EncodeNumeric<float>(values));
  REQUIRE(runner::WriteTensorsFile(path, {t}).ok());
  return path;
}

std::vector<float> FloatsOf(const carton::Tensor& t) {
  std::vector<float> v(t.data.size() / 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t bits = LoadLE32(t.data.data() + 4 * i);
    std::memcpy(&v[i], &bits, 4);
  }
  return v;
}

const carton::Tensor* Find(const std::vector<carton::Tensor>& ts, const std::string& name) {
  for (const auto& t : ts) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("python runner: identity, and =major.minor selects the interpreter's patch release",
          "[python]") {
  TempDir tmp;
  auto info = PythonRunner(tmp.file("cache"), "info");
  REQUIRE(info.exit_code == 0);
  auto j = nlohmann::json::parse(info.out);
  CHECK(j["runner_name"] == "python");
  CHECK(j["runner_compat_version"] == 1);
  const std::string version = j["framework_version"];
  auto full =
      Run(Quote(SystemPython()) + " -c 'import platform; print(platform.python_version())'");
  CHECK(version + "\n" == full.out);
  auto v = ParseVersion(version);
  REQUIRE(v.ok());
  auto req = VersionReq::Parse("=" + PythonMinorVersion());
  REQUIRE(req.ok());
  CHECK(req->Matches(*v));
  CHECK_FALSE(req->Matches(Version{v->major, v->minor + 1, 0, "", ""}));
  CHECK_FALSE(req->Matches(Version{v->major, v->minor, v->patch, "rc1", ""}));
  CHECK(VersionReq::Parse("=3.11")->Matches(*ParseVersion("3.11.2")));
  CHECK_FALSE(VersionReq::Parse("=3.11")->Matches(*ParseVersion("3.10.2")));

  auto runners = Carton(tmp.file("cache"), "runners");
  REQUIRE(runners.exit_code == 0);
  CHECK_THAT(runners.out, Catch::Contains("python " + version + " (compat 1)  " +
                                          PythonRunnerDir() + "/carton-runner-python"));
}

TEST_CASE("python runner: carton infer and self-test on a pack made with --runner python",
          "[python][cli]") {
  TempDir tmp;
  WritePythonModel(tmp.file("m"), "",
                   {{"main.py",
                     "def get_model(scale=1):\n"
                     "    class M:\n"
                     "        def infer_with_tensors(self, t):\n"
                     "            return {'y': t['x'] * scale + 1}\n"
                     "    return M()\n"}});
  const std::string carton = tmp.file("m.carton");
  auto pack = Carton(tmp.file("cache"),
                     "pack " + Quote(tmp.file("m")) + " -o " + Quote(carton) +
                         " --runner python --framework-version '=" + PythonMinorVersion() +
                         "' --opt entrypoint_package=main --opt "
                         "entrypoint_fn=get_model --opt model.scale=3");
  REQUIRE(pack.exit_code == 0);
  auto info = Carton(tmp.file("cache"), "info --json " + Quote(carton));
  REQUIRE(info.exit_code == 0);
  auto j = nlohmann::json::parse(info.out);
  CHECK(j["runner"]["runner_name"] == "python");
  CHECK(j["runner"]["opts"]["entrypoint_package"] == "main");
  CHECK(j["runner"]["opts"]["model.scale"] == 3);

  auto infer = Carton(tmp.file("cache"), "infer " + Quote(carton) + " --input x=" +
                                             Quote(InputFile(tmp.file("x.st"), {1, 2, 3})) +
                                             " --output " + Quote(tmp.file("out.st")));
  REQUIRE(infer.exit_code == 0);
  auto out = runner::ReadTensorsFile(tmp.file("out.st"));
  REQUIRE(out.ok());
  REQUIRE(Find(*out, "y") != nullptr);
  CHECK(Find(*out, "y")->dtype == DataType::kFloat32);
  CHECK(FloatsOf(*Find(*out, "y")) == std::vector<float>{4, 7, 10});

  auto self_test = Carton(tmp.file("cache"), "self-test " + Quote(carton));
  CHECK(self_test.exit_code == 0);
  CHECK_THAT(self_test.out, Catch::Contains("0 of 0 self-tests passed"));

  SECTION("--opt needs KEY=VALUE") {
    auto bad = Carton(tmp.file("cache"), "pack " + Quote(tmp.file("m")) + " -o " +
                                             Quote(tmp.file("bad.carton")) +
                                             " --runner python --framework-version '>=3' "
                                             "--opt novalue");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--opt wants KEY=VALUE, not \"novalue\""));
  }
}

TEST_CASE("python runner: string tensors in and out, numbers and lists as outputs, self-tests",
          "[python][self-test]") {
  TempDir tmp;
  const std::string dir =
      WritePythonModel(tmp.file("m"), NumpyConfig(), {{"main.py", kNumpyModel}}, NumpyData());
  const std::string carton = tmp.file("m.carton");
  REQUIRE(Carton(tmp.file("cache"), "pack " + Quote(dir) + " -o " + Quote(carton)).exit_code == 0);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(carton));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("PASS numbers-and-strings"));
  CHECK_THAT(r.out, Catch::Contains("ok   upper: all 2 strings match"));
  CHECK_THAT(r.out, Catch::Contains("1 of 1 self-tests passed"));
  // The runner's own self-test command, in-process.
  auto own = PythonRunner(tmp.file("cache"), "self-test " + Quote(carton));
  CHECK(own.exit_code == 0);
  CHECK_THAT(own.out, Catch::Contains("PASS numbers-and-strings"));

  SECTION("a wrong expected string fails, naming the output") {
    const std::string bad = WritePythonModel(tmp.file("bad"), NumpyConfig(),
                                             {{"main.py", kNumpyModel}}, NumpyData("omega"));
    auto f = Carton(tmp.file("cache"), "self-test " + Quote(bad));
    CHECK(f.exit_code == 1);
    CHECK_THAT(f.out, Catch::Contains("FAIL first"));
  }
}

TEST_CASE("python runner: seal and infer_with_handle", "[python]") {
  TempDir tmp;
  TensorData d;
  d.tensors.push_back(Float32("x", {3}, {1, -2, 0.5}));
  d.tensors.push_back(Float32("y", {3}, {2, -4, 1}));
  const std::string config =
      "spec_version = 1\n"
      "[[self_test]]\nname = \"one\"\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { y = \"@tensor_data/y\" }\n"
      "[[self_test]]\nname = \"two\"\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { y = \"@tensor_data/y\" }\n" +
      PythonRunnerToml();
  const std::string dir = WritePythonModel(tmp.file("m"), config,
                                           {{"main.py",
                                             "class Handle:\n"
                                             "    pass\n\n\n"
                                             "class Model:\n"
                                             "    def __init__(self):\n"
                                             "        self.sealed = {}\n\n"
                                             "    def seal(self, tensors):\n"
                                             "        handle = Handle()\n"
                                             "        self.sealed[id(handle)] = tensors\n"
                                             "        return handle\n\n"
                                             "    def infer_with_handle(self, handle):\n"
                                             "        tensors = self.sealed.pop(id(handle))\n"
                                             "        return {'y': tensors['x'] * 2}\n\n\n"
                                             "def get_model():\n"
                                             "    return Model()\n"}},
                                           d);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("2 of 2 self-tests passed"));
  CHECK_THAT(r.err, !Catch::Contains("kept input"));
}

TEST_CASE("python runner: model code can import the carton package", "[python][first-day]") {
  TempDir tmp;
  TensorData d;
  d.tensors.push_back(Float32("x", {3}, {1, -2, 0.5}));
  d.tensors.push_back(Float32("y", {3}, {2, -4, 1}));
  const std::string config =
      "spec_version = 1\n"
      "[[self_test]]\nname = \"round-trip\"\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { y = \"@tensor_data/y\" }\n" +
      PythonRunnerToml();
  // The safetensors layer of the package the runner belongs to, used by
  // model code (a model that reads its weights with it).
  const std::string dir = WritePythonModel(tmp.file("m"), config,
                                           {{"main.py",
                                             "import carton\n"
                                             "from carton.safetensors.numpy import load, save\n\n\n"
                                             "class Model:\n"
                                             "    def infer_with_tensors(self, tensors):\n"
                                             "        back = load(save({'x': tensors['x']}))\n"
                                             "        return {'y': back['x'] * 2}\n\n\n"
                                             "def get_model():\n"
                                             "    assert carton.__version__\n"
                                             "    return Model()\n"}},
                                           d);
  // Nothing on PYTHONPATH: the runner finds the package itself.
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("PASS round-trip"));
}

TEST_CASE("python runner: an entry function that raises is a load error with its traceback",
          "[python][errors]") {
  TempDir tmp;
  const std::string dir = WritePythonModel(tmp.file("m"), "spec_version = 1\n" + PythonRunnerToml(),
                                           {{"main.py",
                                             "def load_weights(path):\n"
                                             "    raise RuntimeError('no weights at ' + path)\n\n\n"
                                             "def get_model():\n"
                                             "    return load_weights('/nowhere')\n"}});
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  // The model's own code raised while loading: a model error (exit 3),
  // its traceback shown once.
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("main.get_model raised: RuntimeError: no weights at /nowhere"));
  CHECK(Count(r.err, "raise RuntimeError('no weights at ' + path)") == 1);
  CHECK_THAT(r.err, Catch::Contains("model/main.py\", line 6, in get_model"));
  CHECK_THAT(r.err, Catch::Contains("line 2, in load_weights"));
  CHECK_THAT(r.err, Catch::Contains("raise RuntimeError('no weights at ' + path)"));
  auto own = PythonRunner(tmp.file("cache"), "self-test " + Quote(dir));
  CHECK(own.exit_code == 2);
  CHECK_THAT(own.err, Catch::Contains("carton-runner-python self-test: loading "));
  CHECK_THAT(own.err, Catch::Contains("main.get_model raised: RuntimeError"));
}

TEST_CASE("python runner: bad entry points and options are load errors naming them",
          "[python][errors]") {
  TempDir tmp;
  struct Case {
    const char* what;
    std::string runner_toml;
    std::string main_py;
    std::string message;
  };
  const std::string plain = "def get_model():\n    return 1\n";
  const std::string good =
      "class M:\n    def infer_with_tensors(self, t):\n        return t\n\n\n"
      "def get_model():\n    return M()\n";
  const std::string no_opts =
      "[runner]\nrunner_name = \"python\"\nrequired_framework_version = \">=3\"\n"
      "runner_compat_version = 1\n";
  const Case cases[] = {
      {"no entrypoint_package", no_opts, good,
       "runner opt \"entrypoint_package\" is missing: [runner.opts] must name the module"},
      {"entrypoint_fn not a string",
       no_opts + "[runner.opts]\nentrypoint_package = \"main\"\nentrypoint_fn = 3\n", good,
       "runner opt \"entrypoint_fn\" must be a string, not an integer"},
      {"import error", PythonRunnerToml(), "import no_such_dependency_xyz\n" + good,
       "importing entrypoint_package \"main\": ModuleNotFoundError: No module named "
       "'no_such_dependency_xyz'"},
      {"missing function", PythonRunnerToml(), "x = 1\n",
       "entrypoint_fn \"get_model\": AttributeError: module 'main' has no attribute "
       "'get_model'"},
      {"not a model", PythonRunnerToml(), plain,
       "main.get_model returned an object of type int, which has neither infer_with_tensors "
       "nor seal and infer_with_handle"},
      {"bad python_deps", PythonRunnerToml("python_deps = \"pip\"\n"), good,
       "runner opt \"python_deps\" must be \"lockfile\" or \"system\""},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string dir = WritePythonModel(tmp.file(c.what), "spec_version = 1\n" + c.runner_toml,
                                             {{"main.py", c.main_py}});
    auto r = PythonRunner(tmp.file("cache"), "self-test " + Quote(dir));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
}

TEST_CASE("python runner: model.-prefixed opts reach the entry function as keyword arguments",
          "[python][opts]") {
  TempDir tmp;
  TensorData d;
  d.tensors.push_back(Float32("x", {1}, {0}));
  d.tensors.push_back({"kwargs",
                       DataType::kString,
                       {},
                       {},
                       {"[('flag', True), ('name', 'abc'), ('rate', 0.5), ('scale', 3)]"}});
  const std::string config =
      "spec_version = 1\n[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { kwargs = \"@tensor_data/kwargs\" }\n" +
      PythonRunnerToml(
          "\"model.scale\" = 3\n\"model.name\" = \"abc\"\n\"model.flag\" = true\n"
          "\"model.rate\" = 0.5\nunknown = 1\n");
  const std::string dir =
      WritePythonModel(tmp.file("m"), config,
                       {{"main.py",
                         "class M:\n"
                         "    def __init__(self, kwargs):\n"
                         "        self.kwargs = kwargs\n\n"
                         "    def infer_with_tensors(self, t):\n"
                         "        return {'kwargs': repr(sorted(self.kwargs.items()))}\n\n\n"
                         "def get_model(**kwargs):\n"
                         "    return M(kwargs)\n"}},
                       d);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("[python] carton-runner-python: ignoring unknown option "
                                    "\"unknown\""));
  // --opt overrides reach it too, typed as on the command line.
  auto infer = Carton(
      tmp.file("cache"),
      "infer " + Quote(dir) + " --opt model.scale=7 --opt model.name=xyz --input x=" +
          Quote(InputFile(tmp.file("x.st"), {0})) + " --output " + Quote(tmp.file("out.st")));
  REQUIRE(infer.exit_code == 0);
  auto out = runner::ReadTensorsFile(tmp.file("out.st"));
  REQUIRE(out.ok());
  REQUIRE(Find(*out, "kwargs") != nullptr);
  CHECK(Find(*out, "kwargs")->strings ==
        std::vector<std::string>{"[('flag', True), ('name', 'xyz'), ('rate', 0.5), ('scale', 7)]"});
}

TEST_CASE("python runner: outputs of dtypes carton lacks are errors naming the output",
          "[python][errors]") {
  TempDir tmp;
  TensorData d;
  for (const char* mode : {"complex", "objects", "ok"}) {
    d.tensors.push_back({std::string("mode_") + mode, DataType::kString, {}, {}, {mode}});
  }
  d.tensors.push_back(
      {"r", DataType::kInt64, {}, EncodeNumeric<std::int64_t>(std::vector<std::int64_t>{1}), {}});
  std::string config = "spec_version = 1\n";
  for (const char* mode : {"complex", "objects", "ok"}) {
    config += std::string("[[self_test]]\nname = \"") + mode +
              "\"\ninputs = { mode = \"@tensor_data/mode_" + mode +
              "\" }\nexpected_out = { r = \"@tensor_data/r\" }\n";
  }
  config += PythonRunnerToml();
  const std::string dir =
      WritePythonModel(tmp.file("m"), config,
                       {{"main.py",
                         "import numpy as np\n\n\n"
                         "class M:\n"
                         "    def infer_with_tensors(self, t):\n"
                         "        mode = t['mode'].item()\n"
                         "        if mode == 'complex':\n"
                         "            return {'r': np.zeros(2, dtype=complex)}\n"
                         "        if mode == 'objects':\n"
                         "            return {'r': np.array([1, 'a'], dtype=object)}\n"
                         "        return {'r': 1}\n\n\n"
                         "def get_model():\n"
                         "    return M()\n"}},
                       d);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("FAIL complex: inference failed: "));
  CHECK_THAT(r.out, Catch::Contains("carton-runner-python: the outputs of infer_with_tensors: "
                                    "tensor \"r\": numpy dtype complex128 has no carton dtype"));
  CHECK_THAT(r.out, Catch::Contains("FAIL objects: inference failed: "));
  CHECK_THAT(r.out, Catch::Contains("carton-runner-python: the outputs of infer_with_tensors: "
                                    "tensor \"r\": element 0 has type int; an object array "
                                    "must hold only str"));
  CHECK_THAT(r.out, Catch::Contains("PASS ok"));  // the runner is still there
}

TEST_CASE("python runner: inputs are read-only views, a model keeping one is warned, then copied",
          "[python][zero-copy]") {
  TempDir tmp;
  TensorData d;
  d.tensors.push_back(Float32("x", {4}, {1, 2, 3, 4}));
  d.tensors.push_back({"viewed", DataType::kUint8, {2}, {std::byte{0}, std::byte{0}}, {}});
  d.tensors.push_back({"copied", DataType::kUint8, {2}, {std::byte{1}, std::byte{1}}, {}});
  std::string config = "spec_version = 1\n";
  for (const char* expected : {"viewed", "copied", "copied"}) {
    config += std::string("[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n") +
              "expected_out = { flags = \"@tensor_data/" + expected + "\" }\n";
  }
  config += PythonRunnerToml();
  const std::string dir = WritePythonModel(
      tmp.file("m"), config,
      {{"main.py",
        "import numpy as np\n\n\n"
        "class M:\n"
        "    def __init__(self):\n"
        "        self.kept = []\n\n"
        "    def infer_with_tensors(self, t):\n"
        "        x = t['x']\n"
        "        self.kept.append(x[1:])\n"
        "        return {'flags': np.array([x.flags.owndata, x.flags.writeable], np.uint8)}\n\n\n"
        "def get_model():\n"
        "    return M()\n"}},
      d);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(Count(r.err, "the model kept input \"x\" (or a view of it) after infer returned") == 1);
}

TEST_CASE("python runner: a torch model", "[python][torch]") {
  if (!PythonHasModule("torch")) {
    CARTON_SKIP("python3-torch is not installed: the torch model is not tested");
  }
  TempDir tmp;
  TensorData d;
  d.tensors.push_back(Float32("x", {2, 2}, {1, -1, 0.5, 2}));
  d.tensors.push_back(Float32("y", {2, 2}, {0, 0, 6.5, 9}));
  const std::string config =
      "spec_version = 1\n[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { y = \"@tensor_data/y\" }\n" +
      PythonRunnerToml();
  const std::string dir =
      WritePythonModel(tmp.file("m"), config,
                       {{"main.py",
                         "import numpy as np\nimport torch\n\n\n"
                         "class M:\n"
                         "    def __init__(self):\n"
                         "        self.w = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\n\n"
                         "    def infer_with_tensors(self, t):\n"
                         "        x = torch.from_numpy(np.array(t['x']))\n"
                         "        return {'y': torch.relu(x @ self.w)}\n\n\n"
                         "def get_model():\n"
                         "    return M()\n"}},
                       d);
  auto r = Carton(tmp.file("cache"), "self-test " + Quote(dir));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("1 of 1 self-tests passed"));
}

TEST_CASE("python runner: model code finds large stored safetensors files by name",
          "[python][files]") {
  TempDir tmp;
  // 128 KiB, stored: the loader maps it instead of writing it into model/.
  std::vector<float> w(32768);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7);
  const auto bytes = EncodeNumeric<float>(w);
  TensorData d;
  d.tensors.push_back(Float32("x", {1}, {0}));
  d.tensors.push_back(
      {"sum", DataType::kFloat64, {}, EncodeNumeric<double>(std::vector<double>{98301}), {}});
  const std::string config =
      "spec_version = 1\n[[self_test]]\ninputs = { x = \"@tensor_data/x\" }\n"
      "expected_out = { sum = \"@tensor_data/sum\" }\n" +
      PythonRunnerToml();
  const std::string dir =
      WritePythonModel(tmp.file("m"), config,
                       {{"main.py",
                         "import json, os, struct\nimport numpy as np\n\n\n"
                         "def get_model():\n"
                         "    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "
                         "'sub', 'w.safetensors')\n"
                         "    data = open(path, 'rb').read()\n"
                         "    n = struct.unpack('<Q', data[:8])[0]\n"
                         "    begin, end = json.loads(data[8:8 + n])['w']['data_offsets']\n"
                         "    w = np.frombuffer(data[8 + n + begin:8 + n + end], '<f4')\n\n"
                         "    class M:\n"
                         "        def infer_with_tensors(self, t):\n"
                         "            return {'sum': float(w.sum())}\n"
                         "    return M()\n"},
                        {"sub/notes.txt", "beside the weights\n"}},
                       d);
  std::vector<safetensors::TensorSource> src = {
      {"w", safetensors::Dtype::kF32, {w.size()}, bytes, {}}};
  REQUIRE(safetensors::WriteFile(dir + "/model/sub/w.safetensors", src).ok());
  const std::string carton = tmp.file("m.carton");
  auto pack =
      Carton(tmp.file("cache"), "pack --compression stored " + Quote(dir) + " -o " + Quote(carton));
  REQUIRE(pack.exit_code == 0);
  const std::string hash = pack.out.substr(0, 64);
  auto load = Carton(tmp.file("cache"), "load " + Quote(carton));
  REQUIRE(load.exit_code == 0);
  const std::string entry_model = load.out.substr(0, load.out.size() - 1);
  // Mapped for the loader's views, and a file in the entry's model/ too.
  CHECK(ReadText(entry_model + "/sub/w.safetensors") == ReadText(dir + "/model/sub/w.safetensors"));

  auto r = Carton(tmp.file("cache"), "self-test " + Quote(carton));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("1 of 1 self-tests passed"));
  // No mirror of model/ is needed any more.
  CHECK_FALSE(fs::exists(tmp.file("cache") + "/python/models/" + hash));
  CHECK(PythonRunner(tmp.file("cache"), "self-test " + Quote(carton)).exit_code == 0);
}
