#include "torchscript/torchscript_testing.h"

#include <fstream>
#include <utility>
// glog (through torch) defines CHECK; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

namespace carton::torchscript::testing {

namespace fs = std::filesystem;
using carton::testing::CartonBin;
using carton::testing::Run;

std::string RunnerBin() { return CARTON_TORCHSCRIPT_RUNNER; }

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

TensorValue String(const std::string& name, std::string s) {
  TensorValue v;
  v.name = name;
  v.dtype = DataType::kString;
  v.strings = {std::move(s)};
  return v;
}

void WriteText(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

ModelDir::ModelDir(const TempDir& tmp, torch::jit::Module& module, const std::string& toml,
                   const std::vector<TensorValue>& tensors, const std::string& model_file)
    : dir(tmp.path() / "src") {
  fs::create_directories(dir / "model");
  fs::create_directories((dir / "model" / model_file).parent_path());
  module.save((dir / "model" / model_file).string());
  WriteText(dir / "carton.toml", toml);
  TensorData data;
  data.tensors = tensors;
  REQUIRE(WriteTensorDataDir((dir / "tensor_data").string(), data).ok());
}

std::string Pack(const TempDir& tmp, const ModelDir& model, const std::string& compression) {
  std::string out = tmp.file("model.carton");
  auto r = Run(CartonBin() + " pack '" + model.dir.string() + "' -o '" + out + "' --compression " +
               compression);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return out;
}

std::string Runner(const std::string& requirement, const std::string& opts) {
  return "[runner]\nrunner_name = \"torchscript\"\nrequired_framework_version = \"" + requirement +
         "\"\nrunner_compat_version = 1\n" + (opts.empty() ? "" : "[runner.opts]\n" + opts);
}

}  // namespace carton::torchscript::testing
