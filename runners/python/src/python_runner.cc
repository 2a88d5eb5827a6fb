#include "carton/python_runner/python_runner.h"

#include <pybind11/embed.h>
#include <pybind11/pybind11.h>
#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/links/blob_cache.h"
#include "carton/pybridge/errors.h"
#include "carton/pybridge/numpy_tensor.h"
#include "interpreter.h"
#include "wheels.h"

namespace carton::python_runner {
namespace {

namespace py = pybind11;
using carton::Tensor;

constexpr char kRunnerName[] = "python";
constexpr std::uint64_t kCompatVersion = 1;
constexpr char kLockfilePath[] = ".carton/carton.lock";
constexpr char kModelOptPrefix[] = "model.";
constexpr char kSystemDepsHint[] =
    "; to use the interpreter's installed packages instead, run with --opt python_deps=system";

// The device the model runs on as torch names it: "cpu", or "cuda:0" (the
// runner's process sees its GPU alone; runner::RunnerDevice()).
std::string TorchDeviceName() { return runner::RunnerDevice().gpu ? "cuda:0" : "cpu"; }

void Warn(const std::string& line) {
  std::fprintf(stderr, "carton-runner-python: %s\n", line.c_str());
}

std::string OptTypeName(const RunnerOpt& v) {
  if (std::holds_alternative<std::int64_t>(v)) return "an integer";
  if (std::holds_alternative<double>(v)) return "a float";
  if (std::holds_alternative<bool>(v)) return "a boolean";
  return "a string";
}

py::object OptToPython(const RunnerOpt& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

// The options Load understands, checked.
struct Options {
  std::string entrypoint_package;
  std::string entrypoint_fn;
  bool system_deps = false;
  std::vector<std::pair<std::string, RunnerOpt>> model_kwargs;
};

Result<std::string> StringOpt(const std::map<std::string, RunnerOpt>& opts, const char* key) {
  auto it = opts.find(key);
  if (it == opts.end()) {
    return InvalidArgument(std::string("runner opt \"") + key +
                           "\" is missing: [runner.opts] must name the module (entrypoint_package) "
                           "and the function returning the model (entrypoint_fn)");
  }
  const auto* s = std::get_if<std::string>(&it->second);
  if (s == nullptr) {
    return InvalidArgument(std::string("runner opt \"") + key + "\" must be a string, not " +
                           OptTypeName(it->second));
  }
  if (s->empty()) return InvalidArgument(std::string("runner opt \"") + key + "\" is empty");
  return *s;
}

Result<Options> ReadOptions(const std::map<std::string, RunnerOpt>& opts) {
  Options o;
  CARTON_ASSIGN_OR_RETURN(o.entrypoint_package, StringOpt(opts, "entrypoint_package"));
  CARTON_ASSIGN_OR_RETURN(o.entrypoint_fn, StringOpt(opts, "entrypoint_fn"));
  for (const auto& [key, value] : opts) {
    if (key == "entrypoint_package" || key == "entrypoint_fn") continue;
    if (key == "python_deps") {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr || (*s != "lockfile" && *s != "system")) {
        return InvalidArgument("runner opt \"python_deps\" must be \"lockfile\" or \"system\"");
      }
      o.system_deps = *s == "system";
    } else if (key.rfind(kModelOptPrefix, 0) == 0 && key.size() > sizeof(kModelOptPrefix) - 1) {
      o.model_kwargs.emplace_back(key.substr(sizeof(kModelOptPrefix) - 1), value);
    } else {
      Warn("ignoring unknown option \"" + key + "\"");
    }
  }
  return o;
}

Result<std::optional<Lockfile>> ReadLockfile(const std::string& model_dir) {
  const std::string path = model_dir + "/" + kLockfilePath;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::optional<Lockfile>();
  const std::string source = std::string("model/") + kLockfilePath;
  if (static_cast<std::uint64_t>(st.st_size) > kMaxLockfileSize) {
    return Corrupt(source + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                   std::to_string(kMaxLockfileSize) + " allowed");
  }
  CARTON_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, ReadFile(path));
  CARTON_ASSIGN_OR_RETURN(Lockfile lockfile, ParseLockfile(AsChars(bytes), source));
  return std::optional<Lockfile>(std::move(lockfile));
}

// Whether `fn` takes a keyword argument `name` by that name (not through
// **kwargs, which may pass it on to code that does not expect it).
// REQUIRES: the GIL.
bool TakesKeyword(const py::object& fn, const char* name) {
  try {
    const py::module_ inspect = py::module_::import("inspect");
    const py::object parameter = inspect.attr("Parameter");
    const py::object parameters = inspect.attr("signature")(fn).attr("parameters");
    if (!parameters.contains(name)) return false;
    const py::object kind = parameters[py::str(name)].attr("kind");
    return kind.equal(parameter.attr("POSITIONAL_OR_KEYWORD")) ||
           kind.equal(parameter.attr("KEYWORD_ONLY"));
  } catch (const py::error_already_set&) {
    return false;  // no signature to read (a builtin): not passed
  }
}

// True when `error` is a ModuleNotFoundError for `package` itself (or its
// top-level package): the module is not there, as opposed to an import
// its own code makes failing.
bool IsMissingModule(const py::error_already_set& error, const std::string& package) {
  if (!error.matches(PyExc_ModuleNotFoundError)) return false;
  const py::object name = py::getattr(error.value(), "name", py::none());
  if (name.is_none()) return false;
  const std::string missing = py::str(name);
  return missing == package || package.rfind(missing + ".", 0) == 0;
}

class PythonRunner : public runner::Runner {
 public:
  ~PythonRunner() override {
    if (interpreter_ == nullptr) return;
    py::gil_scoped_acquire gil;
    kept_.clear();
    model_ = infer_with_tensors_ = seal_ = infer_with_handle_ = py::object();
  }

  runner::RunnerIdentity Identity() const override {
    return {kRunnerName, InterpreterVersion(), kCompatVersion};
  }

  Status Load(const std::string& model_dir, const runner::LoadContext& context) override {
    try {
      return LoadModel(model_dir, context);
    } catch (const std::exception& e) {
      return Internal(std::string("loading the model: ") + e.what());
    }
  }

  Result<std::vector<Tensor>> Infer(const std::vector<Tensor>& inputs) override {
    if (!model_) return InvalidArgument("no model is loaded");
    try {
      return Run(inputs);
    } catch (const std::exception& e) {
      return Internal(std::string("inference: ") + e.what());
    }
  }

 private:
  Status LoadModel(const std::string& model_dir, const runner::LoadContext& context) {
    CARTON_ASSIGN_OR_RETURN(Options options, ReadOptions(context.opts));
    for (const TensorSpec& spec : context.config.outputs) hints_[spec.name] = spec.dtype;
    if (interpreter_ == nullptr) {
      CARTON_ASSIGN_OR_RETURN(interpreter_, Interpreter::Start());
    }
    EnvironmentMarkers markers;
    {
      py::gil_scoped_acquire gil;
      CARTON_ASSIGN_OR_RETURN(markers, CurrentMarkers());
    }
    // Wheels are prepared without the GIL: nothing in Python waits on
    // them. model/ holds every file of the carton (the loader writes them
    // all), so Python code opens them by name there.
    CARTON_ASSIGN_OR_RETURN(std::vector<std::string> wheel_dirs,
                            Dependencies(model_dir, options, markers));
    py::gil_scoped_acquire gil;
    std::vector<std::string> path = {model_dir};
    path.insert(path.end(), wheel_dirs.begin(), wheel_dirs.end());
    CARTON_RETURN_IF_ERROR(PrependSysPath(path));
    CARTON_RETURN_IF_ERROR(AppendSysPath(CartonPackageDir()));
    CARTON_RETURN_IF_ERROR(pybridge::Init());
    return MakeModel(options);
  }

  Result<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) {
    py::gil_scoped_acquire gil;
    CheckKeptInputs();
    const auto mode = copy_inputs_ ? pybridge::ArrayMode::kCopy : pybridge::ArrayMode::kView;
    CARTON_ASSIGN_OR_RETURN(py::dict tensors, pybridge::TensorsToDict(inputs, mode));
    if (mode == pybridge::ArrayMode::kView) {
      for (const Tensor& t : inputs) {
        if (t.dtype != DataType::kString)
          kept_.emplace_back(t.name, py::object(tensors[py::str(t.name)]));
      }
    }
    py::object outputs;
    const char* method = infer_with_tensors_ ? "infer_with_tensors" : "seal";
    try {
      if (infer_with_tensors_) {
        outputs = infer_with_tensors_(std::move(tensors));
      } else {
        py::object handle = seal_(std::move(tensors));
        method = "infer_with_handle";
        outputs = infer_with_handle_(std::move(handle));
      }
    } catch (const py::error_already_set& e) {
      return pybridge::ModelErrorFromPython(e, std::string("the model's ") + method + " raised");
    }
    auto result = pybridge::TensorsFromMapping(outputs, hints_);
    if (!result.ok()) {
      return result.status().WithContext(std::string("the outputs of ") + method);
    }
    return result;
  }

  // The folders of the locked wheels, or none (no lockfile, or
  // python_deps=system).
  Result<std::vector<std::string>> Dependencies(const std::string& model_dir,
                                                const Options& options,
                                                const EnvironmentMarkers& markers) {
    auto read = ReadLockfile(model_dir);
    if (!read.ok() && options.system_deps) {
      Warn("python_deps=system: ignoring " + read.status().message());
      return std::vector<std::string>();
    }
    CARTON_ASSIGN_OR_RETURN(std::optional<Lockfile> lockfile, std::move(read));
    if (!lockfile) return std::vector<std::string>();
    const LockfileEntry* entry = MatchLockfileEntry(*lockfile, markers);
    if (options.system_deps) {
      if (entry == nullptr) {
        Warn(
            "python_deps=system: carton.lock has no entry for this environment; using the "
            "interpreter's installed packages");
      } else {
        for (const LockedDep& dep : entry->deps) {
          Warn("python_deps=system: skipping locked wheel " + dep.file_name + " (sha256 " +
               manifest::ToHex(dep.sha256) + ")");
        }
      }
      return std::vector<std::string>();
    }
    if (entry == nullptr) {
      std::string listed;
      for (const LockfileEntry& e : lockfile->entries) {
        listed += "\n  " + DescribeMarkers(e.markers);
      }
      return Unsupported(std::string("model/") + kLockfilePath +
                         " has no entry for this environment (" + DescribeMarkers(markers) +
                         "); its entries are for:" + (listed.empty() ? " none" : listed) + "\n" +
                         std::string(kSystemDepsHint).substr(2));
    }
    auto cache = links::DefaultCacheDir();
    if (!cache.ok()) return cache.status().WithContext("the package cache");
    WheelOptions wheel;
    wheel.cache_root = *cache;
    wheel.model_dir = model_dir;
    auto dirs = InstallWheels(entry->deps, wheel);
    if (!dirs.ok()) {
      return Status(dirs.status().code(), dirs.status().message() + kSystemDepsHint);
    }
    return dirs;
  }

  // Imports the entry point and calls it. REQUIRES: the GIL.
  Status MakeModel(const Options& o) {
    const std::string fn = o.entrypoint_package + "." + o.entrypoint_fn;
    py::module_ module;
    try {
      module = py::module_::import(o.entrypoint_package.c_str());
    } catch (const py::error_already_set& e) {
      const std::string context = "importing entrypoint_package \"" + o.entrypoint_package + "\"";
      // A package that is not there is the carton's mistake; anything the
      // package's own code raises while it is imported is the model's.
      if (IsMissingModule(e, o.entrypoint_package)) return pybridge::StatusFromPython(e, context);
      return pybridge::ModelErrorFromPython(e, context);
    }
    py::object entry;
    try {
      entry = module.attr(o.entrypoint_fn.c_str());
    } catch (const py::error_already_set& e) {
      return pybridge::StatusFromPython(e, "entrypoint_fn \"" + o.entrypoint_fn + "\"");
    }
    if (!PyCallable_Check(entry.ptr())) {
      return InvalidArgument("entrypoint_fn " + fn + " has type " +
                             std::string(Py_TYPE(entry.ptr())->tp_name) + ", not a function");
    }
    try {
      py::dict kwargs;
      for (const auto& [key, value] : o.model_kwargs) kwargs[py::str(key)] = OptToPython(value);
      // The device, to an entry function that asks for it (a model.device
      // option given by the carton wins).
      if (!kwargs.contains("device") && TakesKeyword(entry, "device")) {
        kwargs["device"] = TorchDeviceName();
      }
      model_ = entry(**kwargs);
    } catch (const py::error_already_set& e) {
      return pybridge::ModelErrorFromPython(e, fn + " raised");
    }
    auto method = [&](const char* name) -> py::object {
      py::object m = py::getattr(model_, name, py::none());
      return m.is_none() ? py::object() : m;
    };
    infer_with_tensors_ = method("infer_with_tensors");
    seal_ = method("seal");
    infer_with_handle_ = method("infer_with_handle");
    if (!infer_with_tensors_ && !(seal_ && infer_with_handle_)) {
      const std::string type = Py_TYPE(model_.ptr())->tp_name;
      model_ = py::object();
      return InvalidArgument(fn + " returned an object of type " + type +
                             ", which has neither infer_with_tensors nor seal and "
                             "infer_with_handle");
    }
    return Status::Ok();
  }

  // Inputs are views of memory the caller reuses once Infer returns. An
  // array the runner alone still references was let go; a higher count
  // means the model (or a view it made) kept it. REQUIRES: the GIL.
  void CheckKeptInputs() {
    for (const auto& [name, array] : kept_) {
      if (copy_inputs_ || Py_REFCNT(array.ptr()) <= 1) continue;
      copy_inputs_ = true;
      Warn("warning: the model kept input \"" + name +
           "\" (or a view of it) after infer returned; inputs are read-only views of memory "
           "that later requests reuse, so what it kept may change. From now on inputs are "
           "copied; a model that keeps an input should copy it (numpy.array(x))");
    }
    kept_.clear();
  }

  std::unique_ptr<Interpreter> interpreter_;
  py::object model_;
  py::object infer_with_tensors_;
  py::object seal_;
  py::object infer_with_handle_;
  std::map<std::string, DataType> hints_;
  // The input arrays of the last call, checked at the next one.
  std::vector<std::pair<std::string, py::object>> kept_;
  bool copy_inputs_ = false;
};

}  // namespace

std::unique_ptr<runner::Runner> MakePythonRunner() { return std::make_unique<PythonRunner>(); }

}  // namespace carton::python_runner

// `import carton_runner` in model code: where the runner runs the model.
PYBIND11_EMBEDDED_MODULE(carton_runner, m) {
  using carton::python_runner::TorchDeviceName;
  using carton::runner::RunnerDevice;
  m.doc() = "The carton Python runner, as model code sees it (runners/python/FORMAT.md).";
  m.def("device", &TorchDeviceName,
        "The device to run on, as torch names it: \"cpu\" or \"cuda:0\" (the runner's process "
        "sees its GPU alone).");
  m.def(
      "device_uuid",
      []() -> pybind11::object {
        if (!RunnerDevice().gpu) return pybind11::none();
        return pybind11::str(RunnerDevice().uuid);
      },
      "The GPU's UUID (\"GPU-...\" or \"MIG-...\"), or None on the CPU.");
  m.def(
      "device_requested", [] { return RunnerDevice().requested; },
      "True when the caller chose the device; False for the default (the first GPU when "
      "there is one), which a model that cannot use a GPU may set aside.");
}
