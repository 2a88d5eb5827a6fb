// `carton pack --self-test IN.safetensors[:OUT.safetensors]`: the files'
// tensors become a [[self_test]] of the packed carton (the folder is left
// as it is), checked against the declared inputs and outputs like the
// folder's own self-tests.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing.h"

using carton::testing::Run;
using carton::testing::TempDir;
namespace fs = std::filesystem;

using carton::testing::WriteText;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

// The CLI with the noop runner (which echoes its inputs) on its path.
carton::testing::CommandResult Cli(const TempDir& tmp, const std::string& args) {
  return Run("CARTON_CACHE_DIR=" + Q(tmp.file("cache")) + " CARTON_RUNNER_PATH=" +
             Q(CARTON_NOOP_RUNNER_DIR) + " " + carton::testing::CartonBin() + " " + args);
}

// A safetensors file of one tensor `name`: `dtype`, shape [2], 8 bytes.
std::string Tensors(const TempDir& tmp, const std::string& file, const std::string& name,
                    const std::string& dtype = "F32") {
  const std::string path = tmp.file(file);
  carton::testing::WriteBytes(
      path, carton::testing::RawSafetensors("{\"" + name + "\":{\"dtype\":\"" + dtype +
                                                "\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                                            8, std::byte{1}));
  return path;
}

// A folder declaring x float32 [2] in and out, with a self-test of its own
// (tensor_data/x), for the noop runner.
std::string Folder(const TempDir& tmp) {
  const std::string dir = tmp.file("m");
  WriteText(dir + "/carton.toml",
            "spec_version = 1\n"
            "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [\"n\"]\n"
            "[[output]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\n"
            "[[self_test]]\nname = \"own\"\ninputs = { x = \"@tensor_data/x\" }\n"
            "[runner]\nrunner_name = \"noop\"\nrequired_framework_version = \">=1.0.0, <2\"\n");
  WriteText(dir + "/model/weights.bin", "w");
  WriteText(dir + "/tensor_data/index.toml",
            "[[tensor]]\nname = \"x\"\ndtype = \"float32\"\nshape = [2]\nfile = \"x.bin\"\n");
  WriteText(dir + "/tensor_data/x.bin", std::string(8, '\1'));
  return dir;
}

// Every file of `dir` with its bytes, to show that pack leaves it as it is.
std::string Snapshot(const std::string& dir) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out += e.path().string() + "\n";
    if (e.is_regular_file()) out += carton::testing::ReadText(e.path().string()) + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("cli pack --self-test: safetensors files become a self-test the runner passes",
          "[cli][pack][self-test]") {
  TempDir tmp;
  const std::string dir = Folder(tmp);
  const std::string in = Tensors(tmp, "echo.safetensors", "x");
  const std::string out = Tensors(tmp, "out.safetensors", "x");
  const std::string before = Snapshot(dir);
  const std::string carton = tmp.file("m.carton");
  auto r = Cli(tmp, "pack " + Q(dir) + " -o " + Q(carton) + " --self-test " + Q(in + ":" + out) +
                        " --self-test " + Q(in));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Snapshot(dir) == before);  // the folder is not changed

  const std::string names = Run("unzip -Z1 " + Q(carton)).out;
  CHECK(names.find("tensor_data/self_test_2/tensor_0.bin\n") != std::string::npos);
  CHECK(names.find("tensor_data/self_test_2/tensor_1.bin\n") != std::string::npos);
  CHECK(names.find("tensor_data/self_test_3/tensor_0.bin\n") != std::string::npos);
  CHECK(names.find("tensor_data/x.bin\n") != std::string::npos);
  const std::string toml = Run("unzip -p " + Q(carton) + " carton.toml").out;
  CHECK(toml.find("x = \"@tensor_data/self_test_2_input_x\"") != std::string::npos);
  CHECK(toml.find("x = \"@tensor_data/self_test_2_output_x\"") != std::string::npos);
  CHECK(toml.find("name = \"echo\"") != std::string::npos);

  auto v = Cli(tmp, "verify " + Q(carton));
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  auto st = Cli(tmp, "self-test " + Q(carton));
  INFO(st.out << st.err);
  CHECK(st.exit_code == 0);
}

TEST_CASE("cli pack --self-test: a folder without carton.toml, described by flags",
          "[cli][pack][self-test]") {
  TempDir tmp;
  const std::string dir = tmp.file("flat");
  WriteText(dir + "/weights.bin", "w");
  const std::string in = Tensors(tmp, "in.safetensors", "x");
  const std::string carton = tmp.file("m.carton");
  auto r = Cli(tmp, "pack " + Q(dir) + " -o " + Q(carton) +
                        " --runner noop --framework-version '>=1.0.0, <2' --input x:float32:[2]"
                        " --output-tensor x:float32:[2] --self-test " +
                        Q(in + ":" + in));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(fs::exists(dir + "/carton.toml"));
  CHECK_FALSE(fs::exists(dir + "/tensor_data"));
  CHECK(Cli(tmp, "verify " + Q(carton)).exit_code == 0);
  auto st = Cli(tmp, "self-test " + Q(carton));
  INFO(st.out << st.err);
  CHECK(st.exit_code == 0);
}

TEST_CASE("cli pack --self-test: tensors that contradict the declarations are refused",
          "[cli][pack][self-test][errors]") {
  TempDir tmp;
  const std::string dir = Folder(tmp);
  const std::string carton = tmp.file("m.carton");
  auto refused = [&](const std::string& flag, const std::string& words) {
    auto r = Cli(tmp, "pack " + Q(dir) + " -o " + Q(carton) + " --self-test " + Q(flag));
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK_FALSE(fs::exists(carton));
  };
  const std::string ints = Tensors(tmp, "echo.safetensors", "x", "I32");
  refused(ints,
          "carton.toml: self_test \"echo\": input \"x\": dtype int32, but [[input]] \"x\" is "
          "float32\n");
  const std::string other = Tensors(tmp, "other.safetensors", "z");
  refused(other, "self-test 2 inputs: \"z\" is not a declared input");
  const std::string in = Tensors(tmp, "in.safetensors", "x");
  refused(in + ":" + other, "self-test 2 expected_out: \"z\" is not a declared output");
  refused(in + ":" + ints,
          "self_test \"in\": output \"x\": dtype int32, but [[output]] \"x\" is float32");
  auto missing = Cli(tmp, "pack " + Q(dir) + " -o " + Q(carton) + " --self-test " +
                              Q(tmp.file("missing.safetensors")));
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("missing.safetensors") != std::string::npos);
  CHECK_FALSE(fs::exists(carton));
}
