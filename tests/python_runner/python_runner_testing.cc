#include "python_runner/python_runner_testing.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace carton::testing {
namespace fs = std::filesystem;

std::string PythonRunnerDir() { return CARTON_PYTHON_RUNNER_DIR; }
std::string SystemPython() { return CARTON_SYSTEM_PYTHON; }

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

std::string PythonOutput(const std::string& code) {
  auto r = Run(Quote(SystemPython()) + " -c " + Quote(code));
  if (r.exit_code != 0) throw std::runtime_error("python failed: " + r.err);
  return r.out;
}

}  // namespace

std::string PythonMinorVersion() {
  static const std::string version =
      PythonOutput("import sys; print('%d.%d' % sys.version_info[:2], end='')");
  return version;
}

std::string PythonRunnerToml(const std::string& extra_opts) {
  return "[runner]\nrunner_name = \"python\"\nrequired_framework_version = \"=" +
         PythonMinorVersion() +
         "\"\nrunner_compat_version = 1\n[runner.opts]\nentrypoint_package = \"main\"\n"
         "entrypoint_fn = \"get_model\"\n" +
         extra_opts;
}

std::string WritePythonModel(const std::string& dir, const std::string& config,
                             const std::map<std::string, std::string>& model_files,
                             const TensorData& data) {
  fs::create_directories(dir + "/model");
  if (!config.empty()) std::ofstream(dir + "/carton.toml", std::ios::binary) << config;
  for (const auto& [name, text] : model_files) {
    const fs::path path = fs::path(dir) / "model" / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  if (!data.tensors.empty() && !WriteTensorDataDir(dir + "/tensor_data", data).ok()) {
    throw std::runtime_error("cannot write tensor_data");
  }
  return dir;
}

CommandResult Carton(const std::string& cache, const std::string& args) {
  return Run("CARTON_CACHE_DIR=" + Quote(cache) + " CARTON_RUNNER_PATH=" +
             Quote(PythonRunnerDir()) + " " + Quote(CartonBin()) + " " + args);
}

CommandResult PythonRunner(const std::string& cache, const std::string& args) {
  return Run("CARTON_CACHE_DIR=" + Quote(cache) + " " +
             Quote(PythonRunnerDir() + "/carton-runner-python") + " " + args);
}

std::string BuildWheel(const std::string& path, const std::map<std::string, std::string>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, text] : entries) list.push_back({name, text});
  const std::string spec = path + ".json";
  std::ofstream(spec, std::ios::binary) << list.dump();
  const std::string code =
      "import json, sys, zipfile\n"
      "with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n"
      "    for name, text in json.load(open(sys.argv[2])):\n"
      "        z.writestr(name, text)\n";
  auto r =
      Run(Quote(SystemPython()) + " -c " + Quote(code) + " " + Quote(path) + " " + Quote(spec));
  fs::remove(spec);
  if (r.exit_code != 0) throw std::runtime_error("cannot build wheel: " + r.err);
  return path;
}

std::string CurrentMarkersToml() {
  return PythonOutput(
      "import os, platform, sys\n"
      "for k, v in [('os_name', os.name), ('sys_platform', sys.platform),\n"
      "             ('platform_machine', platform.machine()),\n"
      "             ('platform_python_implementation', platform.python_implementation()),\n"
      "             ('python_version', '.'.join(platform.python_version_tuple()[:2]))]:\n"
      "    print('%s = \"%s\"' % (k, v))\n");
}

bool PythonHasModule(const std::string& module) {
  return Run(Quote(SystemPython()) + " -c " + Quote("import " + module) + " 2>/dev/null")
             .exit_code == 0;
}

TensorValue Float32(const std::string& name, std::vector<std::uint64_t> shape,
                    const std::vector<float>& values) {
  return {name, DataType::kFloat32, std::move(shape), EncodeNumeric<float>(values), {}};
}

}  // namespace carton::testing
