// carton.load / carton.load_unpacked and the Model they return: a thin
// shell over carton::runner::Model (load the carton through the cache,
// start its runner, check inputs, infer), which the CLI and the C API use
// as well; this file only translates Python's arguments and results.
//
// Threads: calls into one Model are serialized by its mutex, which is only
// ever waited for with the GIL released (a thread holding the mutex may
// need the GIL to convert its results).
#include "carton/runner/model.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "bindings.h"
#include "carton/common/notice.h"
#include "carton/loader/device.h"
#include "carton/loader/environment.h"
#include "carton/loader/loader.h"
#include "carton/pybridge/numpy_tensor.h"
#include "carton/runner/self_test.h"
#include "config_convert.h"
#include "stage.h"

namespace carton::python {
namespace {

namespace fs = std::filesystem;
using carton::Tensor;
using loader::LoadedCarton;

// What load and load_unpacked hand the Model.
struct Started {
  std::optional<StagedCarton> stage;
  runner::Model model;
};

// The options every carton.Model is started with: runner_opts as --opt
// overrides, lenient, the device; warnings go through the notice sink
// (carton.set_notice_handler, else stderr).
runner::ModelOptions OptionsFor(const std::map<std::string, RunnerOpt>& opts, bool lenient,
                                loader::Device device) {
  runner::ModelOptions options;
  options.runner_opts = OptsAsText(opts);
  options.lenient = lenient;
  options.device = std::move(device);
  options.on_warning = [](std::string_view text) { Notice(std::string(text)); };
  return options;
}

// Python's bool, or numpy's (numpy.bool_; numpy.bool from numpy 2), which
// has __index__ too.
bool IsBool(py::handle value) {
  return py::isinstance<py::bool_>(value) ||
         std::string_view(Py_TYPE(value.ptr())->tp_name).starts_with("numpy.bool");
}

// visible_device: None (the default), a GPU's index (an int, or anything
// with __index__ but a bool), or a spec (carton/loader/device.h).
// REQUIRES: the GIL.
loader::DeviceSpec DeviceFromPython(py::handle visible_device) {
  if (visible_device.is_none()) return {};
  if (py::isinstance<py::str>(visible_device)) {
    const std::string text = visible_device.cast<std::string>();
    if (text.empty()) {
      Raise(InvalidArgument("visible_device is empty (" + std::string(loader::kDeviceForms) + ")"));
    }
    return Unwrap(loader::ParseDeviceSpec(text));
  }
  if (!IsBool(visible_device) && PyIndex_Check(visible_device.ptr())) {
    // An __index__ that raises raises here; an int past 64 bits is refused
    // as it was given, not as a clipped one.
    const auto number = py::reinterpret_steal<py::int_>(PyNumber_Index(visible_device.ptr()));
    if (!number) throw py::error_already_set();
    int overflow = 0;
    const long long index = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
    if (overflow != 0) {
      return Unwrap(loader::ParseDeviceSpec(py::str(py::object(number)).cast<std::string>()));
    }
    return Unwrap(loader::DeviceSpecForIndex(index));
  }
  Raise(InvalidArgument("visible_device must be None, an int (a GPU's index) or a str (" +
                        std::string(loader::kDeviceForms) + "), not " +
                        std::string(Py_TYPE(visible_device.ptr())->tp_name)));
}

class Model {
 public:
  explicit Model(Started started)
      : stage_(std::move(started.stage)), model_(std::move(started.model)) {
    for (const auto& s : model_.config().inputs) hints_[s.name] = s.dtype;
  }

  ~Model() {
    // Ends the runner without holding up other Python threads (not while
    // the interpreter shuts down, when no other thread may take the GIL).
    if (closed_) return;
    if (Py_IsInitialized() && !_Py_IsFinalizing()) {
      py::gil_scoped_release nogil;
      (void)model_.Close();
    } else {
      (void)model_.Close();
    }
  }

  static std::unique_ptr<Model> Load(const std::string& path_or_url,
                                     const std::optional<std::string>& runner_name,
                                     const std::optional<std::string>& framework_version,
                                     py::handle runner_opts, bool lenient,
                                     py::handle visible_device) {
    const auto opts = OptsFromPython(runner_opts);
    const Location location = Unwrap(Location::Parse(path_or_url));
    const loader::DeviceSpec device_spec = DeviceFromPython(visible_device);
    auto started = WithoutGil([&]() -> Result<Started> {
      // A GPU that is not there is refused before the carton loads.
      CARTON_ASSIGN_OR_RETURN(loader::Device device, loader::ResolveDevice(device_spec));
      runner::ModelOptions options = OptionsFor(opts, lenient, std::move(device));
      options.runner_name = runner_name;
      options.framework_version = framework_version;
      CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
      CARTON_ASSIGN_OR_RETURN(runner::Model model, runner::Model::Open(location, env, options));
      return Started{std::nullopt, std::move(model)};
    });
    return std::make_unique<Model>(Unwrap(std::move(started)));
  }

  static std::unique_ptr<Model> LoadUnpacked(const std::string& path, const py::dict& config,
                                             py::handle self_tests, py::handle examples,
                                             py::handle misc_files, py::handle visible_device) {
    const loader::DeviceSpec device_spec = DeviceFromPython(visible_device);
    StageContents contents;
    contents.config = ConfigFromPython(config);
    AddTensorSets(&contents, self_tests, examples);
    AddMiscFiles(&contents, misc_files);
    auto started = WithoutGil([&]() -> Result<Started> {
      CARTON_ASSIGN_OR_RETURN(loader::Device device, loader::ResolveDevice(device_spec));
      std::error_code ec;
      const fs::path tmp = fs::temp_directory_path(ec);
      if (ec) return IoError("no temporary directory: " + ec.message());
      CARTON_ASSIGN_OR_RETURN(StagedCarton stage,
                              StagedCarton::Create(tmp.string(), path, contents));
      CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
      CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(stage.path(), env, {.operation = "load"}));
      CARTON_ASSIGN_OR_RETURN(LoadedCarton carton, loader::Load(*source));
      CARTON_ASSIGN_OR_RETURN(
          runner::Model model,
          runner::Model::Start(std::move(carton), OptionsFor({}, false, std::move(device))));
      return Started{std::move(stage), std::move(model)};
    });
    return std::make_unique<Model>(Unwrap(std::move(started)));
  }

  py::dict Info() const {
    const LoadedCarton& carton = model_.carton();
    py::dict d = ConfigToPython(carton.config());
    const auto& hash = carton.manifest_hash();
    d["manifest_sha256"] = hash ? py::object(py::str(manifest::ToHex(*hash))) : py::none();
    py::list self_tests, examples, misc;
    for (const auto& t : carton.self_tests()) self_tests.append(TensorSetToPython(t, false));
    for (const auto& x : carton.examples()) examples.append(TensorSetToPython(x, true));
    for (const auto& f : carton.misc_files()) misc.append(MiscFileToPython(f));
    d["self_tests"] = std::move(self_tests);
    d["examples"] = std::move(examples);
    d["misc_files"] = std::move(misc);
    d["root_dir"] = carton.root_dir();
    d["model_dir"] = carton.model_dir();
    d["runner_path"] = model_.runner().path;
    d["runner_framework_version"] = model_.runner().framework_version;
    return d;
  }

  py::dict Infer(py::handle inputs) {
    std::vector<Tensor> tensors = Unwrap(pybridge::TensorsFromMapping(inputs, hints_));
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    // The inputs are checked against the declared [[input]]s before the
    // model runs (runner::Model), as `carton infer` checks them.
    auto outputs = WithoutGil([&]() -> Result<std::vector<Tensor>> {
      lock.lock();
      if (closed_) return InvalidArgument("the model is closed");
      return model_.Infer(tensors);
    });
    // No copy: the arrays view the runner's output arena, which their base
    // keeps mapped and reserved for them (the runner writes later replies
    // elsewhere while they live). It is mapped writable and the runner
    // never reads it back, so the arrays are writable like arrays of their
    // own.
    return Unwrap(
        pybridge::TensorsToDict(Unwrap(std::move(outputs)), pybridge::ArrayMode::kWritableView));
  }

  py::dict SelfTest(double rtol, double atol) {
    safetensors::CompareOptions compare;
    compare.rtol = rtol;
    compare.atol = atol;
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    auto report = WithoutGil([&]() -> Result<runner::SelfTestReport> {
      lock.lock();
      if (closed_) return InvalidArgument("the model is closed");
      // A runner that crashed or hung is trouble, not a verdict on the
      // model (as `carton self-test` reports it).
      runner::SelfTestReport r;
      CARTON_RETURN_IF_ERROR(model_.SelfTest(compare, &r));
      return r;
    });
    return ReportToPython(Unwrap(std::move(report)));
  }

  void Close() {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    Check(WithoutGil([&]() -> Status {
      lock.lock();
      if (closed_) return Status::Ok();
      closed_ = true;
      Status s = model_.Close();
      stage_.reset();  // mappings of its files stay valid
      return s;
    }));
  }

  const std::string& model_dir() const { return model_.carton().model_dir(); }
  const std::string& runner_path() const { return model_.runner().path; }

  bool closed() {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    WithoutGil([&] { lock.lock(); });
    return closed_;
  }

 private:
  // A tensor of the loaded carton as a read-only array; its bytes stay
  // mapped as long as the array lives.
  py::object Array(Tensor t) const {
    if (!t.owner) t.owner = std::make_shared<const LoadedCarton>(model_.carton());
    return Unwrap(pybridge::TensorToPython(t, pybridge::ArrayMode::kView));
  }

  static py::dict MiscFileToPython(const loader::MiscFile& f) {
    py::dict d;
    d["path"] = f.path;
    d["local_path"] = f.local_path;
    return d;
  }

  py::dict TensorSetToPython(const loader::TensorSet& set, bool example) const {
    auto tensors = [&](const std::vector<Tensor>& ts,
                       const std::vector<std::pair<std::string, loader::MiscFile>>& files) {
      py::dict d;
      for (const Tensor& t : ts) d[py::str(t.name)] = Array(t);
      for (const auto& [name, f] : files) d[py::str(name)] = MiscFileToPython(f);
      return d;
    };
    py::dict d;
    d["name"] = set.name;
    d["description"] = set.description ? py::object(py::str(*set.description)) : py::none();
    d["inputs"] = tensors(set.inputs, set.input_files);
    d[example ? "sample_out" : "expected_out"] = tensors(set.outputs, set.output_files);
    return d;
  }

  static py::dict ReportToPython(const runner::SelfTestReport& report) {
    py::list tests;
    for (const auto& t : report.tests) {
      py::list outputs;
      for (const auto& o : t.outputs) {
        py::dict e;
        e["name"] = o.name;
        e["passed"] = o.passed;
        e["message"] = o.message;
        outputs.append(std::move(e));
      }
      py::dict e;
      e["name"] = t.name;
      e["passed"] = t.passed;
      e["error"] = t.error;
      e["outputs"] = std::move(outputs);
      e["seconds"] = t.seconds;
      tests.append(std::move(e));
    }
    py::dict d;
    d["passed"] = report.passed();
    d["tests"] = std::move(tests);
    return d;
  }

  // Destroyed in reverse order: the runner ends before its files go.
  std::optional<StagedCarton> stage_;
  runner::Model model_;
  std::map<std::string, DataType> hints_;
  std::mutex mu_;
  bool closed_ = false;  // guarded by mu_
};

}  // namespace

void BindModel(py::module_& m) {
  py::class_<Model>(m, "Model", "A loaded carton and its runner process (see carton.Model).")
      .def_static("load", &Model::Load, py::arg("path_or_url"), py::arg("runner_name"),
                  py::arg("required_framework_version"), py::arg("runner_opts"),
                  py::arg("lenient") = false, py::arg("visible_device") = py::none())
      .def_static("load_unpacked", &Model::LoadUnpacked, py::arg("path"), py::arg("config"),
                  py::arg("self_tests"), py::arg("examples"), py::arg("misc_files"),
                  py::arg("visible_device") = py::none())
      .def("info", &Model::Info)
      .def("infer", &Model::Infer, py::arg("inputs"))
      .def("self_test", &Model::SelfTest, py::arg("rtol"), py::arg("atol"))
      .def("close", &Model::Close)
      .def_property_readonly("closed", &Model::closed)
      .def_property_readonly("model_dir", &Model::model_dir)
      .def_property_readonly("runner_path", &Model::runner_path);
}

}  // namespace carton::python
