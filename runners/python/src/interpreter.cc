#include "interpreter.h"

#include <pybind11/embed.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "carton/pybridge/errors.h"

namespace carton::python_runner {
namespace {

namespace fs = std::filesystem;
namespace py = pybind11;

// Marker values as the original's packager computes them (PEP 508).
constexpr char kMarkersCode[] = R"PY(
import os, platform, sys

def _version(info):
    v = '{0.major}.{0.minor}.{0.micro}'.format(info)
    if info.releaselevel != 'final':
        v += info.releaselevel[0] + str(info.serial)
    return v

markers = {
    'os_name': os.name,
    'sys_platform': sys.platform,
    'platform_machine': platform.machine(),
    'platform_python_implementation': platform.python_implementation(),
    'platform_release': platform.release(),
    'platform_system': platform.system(),
    'python_version': '.'.join(platform.python_version_tuple()[:2]),
    'python_full_version': platform.python_version(),
    'implementation_name': sys.implementation.name,
    'implementation_version': _version(sys.implementation.version),
}
)PY";

}  // namespace

Result<std::unique_ptr<Interpreter>> Interpreter::Start() {
  if (Py_IsInitialized()) return InvalidArgument("the Python interpreter is already running");
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
#ifdef CARTON_PYTHON_EXECUTABLE
  // The interpreter the runner was built against: Python finds its prefix
  // (the standard library, site-packages) from it, and sys.executable names
  // a real interpreter for models that start one.
  if (::access(CARTON_PYTHON_EXECUTABLE, X_OK) == 0) {
    PyStatus st = PyConfig_SetBytesString(&config, &config.executable, CARTON_PYTHON_EXECUTABLE);
    if (PyStatus_Exception(st)) {
      PyConfig_Clear(&config);
      return Internal(std::string("configuring Python: ") +
                      (st.err_msg != nullptr ? st.err_msg : "failed"));
    }
  }
#endif
  const char* argv[] = {"carton-runner-python"};
  try {
    py::initialize_interpreter(&config, 1, argv, /*add_program_dir_to_path=*/false);
  } catch (const std::exception& e) {
    return Internal(std::string("starting Python: ") + e.what());
  }
  try {
    py::module_ sys = py::module_::import("sys");
    sys.attr("stdout") = sys.attr("stderr");
  } catch (const py::error_already_set& e) {
    return pybridge::StatusFromPython(e, "starting Python");
  }
  std::unique_ptr<Interpreter> interpreter(new Interpreter());
  interpreter->saved_ = PyEval_SaveThread();
  return interpreter;
}

Interpreter::~Interpreter() {
  PyEval_RestoreThread(saved_);
  try {
    py::module_::import("atexit").attr("_run_exitfuncs")();
  } catch (const py::error_already_set& e) {
    std::fprintf(stderr, "carton-runner-python: %s\n",
                 pybridge::StatusFromPython(e, "at exit").message().c_str());
  }
  try {
    py::module_ sys = py::module_::import("sys");
    sys.attr("stderr").attr("flush")();
    sys.attr("__stdout__").attr("flush")();
  } catch (const py::error_already_set&) {
    PyErr_Clear();
  }
}

std::string InterpreterVersion() {
  // "3.11.2 (main, ...)"; a prerelease such as "3.13.0rc1" reports 3.13.0.
  unsigned major = 0, minor = 0, micro = 0;
  std::sscanf(Py_GetVersion(), "%u.%u.%u", &major, &minor, &micro);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(micro);
}

Result<EnvironmentMarkers> CurrentMarkers() {
  try {
    py::dict scope;
    py::exec(kMarkersCode, scope);
    EnvironmentMarkers markers;
    for (auto [key, value] : py::dict(scope["markers"])) {
      markers[key.cast<std::string>()] = py::str(value).cast<std::string>();
    }
    return markers;
  } catch (const py::error_already_set& e) {
    return pybridge::StatusFromPython(e, "reading the environment markers");
  }
}

std::string CartonPackageDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // <prefix>/libexec/carton/runners/carton-runner-python
    const fs::path installed =
        exe.parent_path().parent_path().parent_path().parent_path() / CARTON_PYTHON_INSTALL_DIR;
    if (fs::exists(installed / "carton" / "__init__.py", ec)) return installed.string();
  }
  const fs::path built = CARTON_PYTHON_BUILD_DIR;
  if (fs::exists(built / "carton" / "__init__.py", ec)) return built.string();
  return "";
}

Status AppendSysPath(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  try {
    py::list path = py::module_::import("sys").attr("path");
    if (!path.contains(py::str(dir))) path.append(dir);
    return Status::Ok();
  } catch (const py::error_already_set& e) {
    return pybridge::StatusFromPython(e, "setting sys.path");
  }
}

Status PrependSysPath(const std::vector<std::string>& dirs) {
  try {
    py::list path = py::module_::import("sys").attr("path");
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      path.attr("insert")(i, dirs[i]);
    }
    py::module_::import("importlib").attr("invalidate_caches")();
    return Status::Ok();
  } catch (const py::error_already_set& e) {
    return pybridge::StatusFromPython(e, "setting sys.path");
  }
}

}  // namespace carton::python_runner
