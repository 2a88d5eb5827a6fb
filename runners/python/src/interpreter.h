// Private: the CPython interpreter embedded in the Python runner.
//
// Start() initializes it once per process (Python's own signal handlers
// off, so the runner keeps the default behaviour for SIGINT and SIGTERM;
// sys.stdout redirected to sys.stderr, because the runner's stdout carries
// its reports) and then releases the GIL: every later use takes it with
// pybind11::gil_scoped_acquire. The destructor takes the GIL back, runs
// the atexit functions and flushes Python's streams, but does not finalize
// the interpreter: extension modules such as torch do not all survive
// finalization, and a thread a model started would keep it waiting.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/python_runner/lockfile.h"

namespace carton::python_runner {

class Interpreter {
 public:
  // Errors: kInternal when Python cannot start (with its message).
  static Result<std::unique_ptr<Interpreter>> Start();
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

 private:
  Interpreter() = default;
  PyThreadState* saved_ = nullptr;  // while the GIL is released
};

// "3.11.2": the version of the libpython this process runs (it need not
// be started).
std::string InterpreterVersion();

// The PEP 508 environment markers of the running interpreter (every name
// of EnvironmentMarkerNames()). REQUIRES: the GIL.
Result<EnvironmentMarkers> CurrentMarkers();

// Puts `dirs` at the front of sys.path, in order, and drops the import
// system's cached directory listings. REQUIRES: the GIL.
Status PrependSysPath(const std::vector<std::string>& dirs);

// The directory holding this runner's `carton` Python package: the
// installed one (<prefix>/<site-packages>, the runner being in
// <prefix>/libexec/carton/runners), else the build tree's; "" when
// neither has it.
std::string CartonPackageDir();

// Puts `dir` at the end of sys.path unless it is there or empty, so model
// code can `import carton` while its own dependencies come first.
// REQUIRES: the GIL.
Status AppendSysPath(const std::string& dir);

}  // namespace carton::python_runner
