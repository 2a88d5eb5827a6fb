#include "loader/loader_testing.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "carton/format/tensor_data.h"
#include "carton/loader/environment.h"
#include "carton/safetensors/writer.h"

namespace carton::testing {

Result<loader::LoadedCarton> LoadAt(const Location& location, const loader::LoadOptions& options,
                                    const Environment& env) {
  SourceOptions source_options;
  source_options.operation = "load";
  source_options.progress = options.progress;
  CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(location, env, source_options));
  return loader::Load(*source, options);
}

Result<loader::LoadedCarton> LoadAt(const Location& location, const loader::LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
  return LoadAt(location, options, env);
}

std::string LoaderConfig(const std::string& runner_toml) {
  return "spec_version = 1\nmodel_name = \"loader-test\"\n"
         "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [4]\n"
         "[[input]]\nname = \"labels\"\ndtype = \"string\"\nshape = [2]\n"
         "[[output]]\nname = \"x\"\ndtype = \"float32\"\nshape = [4]\n"
         "[[output]]\nname = \"labels\"\ndtype = \"string\"\nshape = [2]\n"
         "[[self_test]]\nname = \"echo\"\n"
         "inputs = { x = \"@tensor_data/x\", labels = \"@tensor_data/labels\" }\n"
         "expected_out = { x = \"@tensor_data/x\", labels = \"@tensor_data/labels\" }\n"
         "[[example]]\nname = \"ex\"\ninputs = { x = \"@tensor_data/x\", labels = "
         "\"@misc/readme.md\" }\n"
         "sample_out = { x = \"@tensor_data/x\" }\n"
         "[runner]\n" +
         runner_toml;
}

std::string MakeModelDir(const std::string& dir, std::uint64_t weight_floats,
                         const std::string& config) {
  namespace fs = std::filesystem;
  fs::create_directories(dir + "/model");
  fs::create_directories(dir + "/misc");
  std::ofstream(dir + "/carton.toml", std::ios::binary) << config;
  std::ofstream(dir + "/model/notes.txt", std::ios::binary) << "notes\n";
  std::ofstream(dir + "/misc/readme.md", std::ios::binary) << "# readme\n";
  std::vector<float> w(weight_floats);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 1000) * 0.5f;
  auto wb = EncodeNumeric<float>(w);
  std::vector<safetensors::TensorSource> src = {
      {"w", safetensors::Dtype::kF32, {weight_floats}, wb, {}}};
  if (!safetensors::WriteFile(dir + "/model/weights.safetensors", src).ok()) {
    throw std::runtime_error("cannot write weights");
  }
  TensorData data;
  std::vector<float> x = {1.5f, -2.0f, 3.25f, 0.0f};
  data.tensors.push_back({"x", DataType::kFloat32, {4}, EncodeNumeric<float>(x), {}});
  data.tensors.push_back({"labels", DataType::kString, {2}, {}, {"first", "second"}});
  data.tensors.push_back({"big", DataType::kFloat32, {weight_floats}, wb, {}});
  if (!WriteTensorDataDir(dir + "/tensor_data", data).ok()) {
    throw std::runtime_error("cannot write tensor_data");
  }
  return dir;
}

std::string PackDir(const std::string& dir, const std::string& out, PackCompression compression) {
  PackOptions o;
  o.compression = compression;
  auto r = Pack(dir, out, o);
  if (!r.ok()) throw std::runtime_error("pack: " + r.status().message());
  return manifest::ToHex(r->manifest_hash);
}

std::string NoopRunnerDir() { return CARTON_NOOP_RUNNER_DIR; }
std::string FakeRunnerBin() { return CARTON_FAKE_RUNNER; }

void WriteFakeRunner(const std::string& dir, const std::string& file_name,
                     const std::string& env_assignments) {
  std::filesystem::create_directories(dir);
  std::string path = dir + "/carton-runner-" + file_name;
  std::ofstream(path) << "#!/bin/sh\n"
                      << env_assignments << " exec '" << FakeRunnerBin() << "' \"$@\"\n";
  ::chmod(path.c_str(), 0755);
}

}  // namespace carton::testing
