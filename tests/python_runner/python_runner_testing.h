// Helpers for the Python runner's tests: carton directories holding Python
// models written by the tests, wheels built with Python's zipfile, and the
// CLI run with a private cache and the Python runner.
#pragma once

#include <map>
#include <string>

#include "carton/format/tensor_data.h"
#include "testing.h"

namespace carton::testing {

// The directory of the built carton-runner-python, and Debian's interpreter.
std::string PythonRunnerDir();
std::string SystemPython();

// Shell-quotes `s` in single quotes.
std::string Quote(const std::string& s);

// "3.11": major.minor of Debian's interpreter (the runner's).
std::string PythonMinorVersion();

// The [runner] table of a Python model: framework "=<major>.<minor>" of the
// runner's interpreter, entrypoint main.get_model, plus `extra_opts` lines
// (TOML) in [runner.opts].
std::string PythonRunnerToml(const std::string& extra_opts = "");

// Writes `dir`/carton.toml (`config`, when not empty), `dir`/model/<name>
// for every file, and `dir`/tensor_data from `data` (when it has tensors).
// Returns `dir`.
std::string WritePythonModel(const std::string& dir, const std::string& config,
                             const std::map<std::string, std::string>& model_files,
                             const TensorData& data = {});

// Runs `carton ARGS` with $CARTON_CACHE_DIR = `cache` and the Python runner
// on $CARTON_RUNNER_PATH.
CommandResult Carton(const std::string& cache, const std::string& args);
// Runs `carton-runner-python ARGS` with $CARTON_CACHE_DIR = `cache`.
CommandResult PythonRunner(const std::string& cache, const std::string& args);

// Writes a wheel (a zip made by Python's zipfile with deflate) at `path`
// holding `entries` (name -> text). Returns `path`.
std::string BuildWheel(const std::string& path, const std::map<std::string, std::string>& entries);

// The PEP 508 markers of Debian's interpreter as TOML lines
// ("os_name = \"posix\"\n..."): what the runner matches a lockfile entry on.
std::string CurrentMarkersToml();

// True when `import <module>` works in Debian's interpreter.
bool PythonHasModule(const std::string& module);

// The float32 tensor `name` of `shape` holding `values`.
TensorValue Float32(const std::string& name, std::vector<std::uint64_t> shape,
                    const std::vector<float>& values);

}  // namespace carton::testing
