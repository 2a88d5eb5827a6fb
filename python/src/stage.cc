#include "stage.h"

#include <pybind11/stl.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "bindings.h"
#include "carton/common/atomic_file.h"
#include "carton/common/posix_error.h"
#include "carton/manifest/manifest.h"
#include "carton/pybridge/numpy_tensor.h"
#include "config_convert.h"

namespace carton::python {
namespace {

namespace fs = std::filesystem;

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

// The bytes of a bytes, bytearray or memoryview.
std::string BytesOf(py::handle value) {
  auto bytes = py::reinterpret_steal<py::object>(PyBytes_FromObject(value.ptr()));
  if (!bytes) throw py::error_already_set();
  return py::cast<std::string>(bytes);
}

std::optional<DataType> Declared(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (const auto& s : specs) {
    if (s.name == name) return s.dtype;
  }
  return std::nullopt;
}

TensorValue ToValue(const carton::Tensor& t, std::string name) {
  TensorValue v;
  v.name = std::move(name);
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.data.assign(t.data.begin(), t.data.end());
  v.strings = t.strings;
  return v;
}

// Converts one {name: value} mapping of a self-test or example into refs,
// adding the tensors (and, for examples, misc files) to `contents`.
TensorRefs AddTensors(StageContents* contents, py::handle mapping, const std::string& prefix,
                      const std::string& what, const std::vector<TensorSpec>& specs,
                      bool allow_files) {
  TensorRefs refs;
  if (!PyDict_Check(mapping.ptr())) {
    Raise(InvalidArgument(what + " must be a dict of tensors, not " + TypeName(mapping)));
  }
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(mapping)) {
    if (!PyUnicode_Check(key.ptr())) {
      Raise(InvalidArgument(what + ": a tensor name has type " + TypeName(key) + ", not str"));
    }
    const std::string name = py::cast<std::string>(key);
    const std::string stored = prefix + name;
    if (allow_files && (PyBytes_Check(value.ptr()) || PyByteArray_Check(value.ptr()))) {
      contents->misc_files.emplace_back(stored, BytesOf(value));
      refs[name] = "@misc/" + stored;
      continue;
    }
    auto tensor = pybridge::TensorFromPython(name, value, Declared(specs, name));
    if (!tensor.ok()) Raise(tensor.status().WithContext(what));
    contents->tensor_data.tensors.push_back(ToValue(*tensor, stored));
    refs[name] = "@tensor_data/" + stored;
  }
  return refs;
}

py::object Field(py::handle entry, const char* key) {
  py::dict d = py::reinterpret_borrow<py::dict>(entry);
  return d.contains(key) ? py::object(d[key]) : py::object(py::none());
}

Status WriteBytes(const std::string& path, std::string_view bytes) {
  return WriteFileAtomically(path, AsBytes(bytes));
}

Status Errno(const std::string& what) { return ErrnoIoError(errno, what); }

// model/ as a symlink to the model directory, or holding one to the model
// file: the model is used in place.
Status StageModel(const std::string& model_path, const fs::path& model_dir) {
  std::error_code ec;
  const fs::path source = fs::absolute(model_path, ec);
  if (ec) return IoError(model_path + ": " + ec.message());
  const fs::file_status st = fs::status(source, ec);
  if (ec || !fs::exists(st)) return NotFound(model_path + ": no such file or directory");
  const bool dir = fs::is_directory(st);
  if (!dir && !fs::is_regular_file(st)) {
    return InvalidArgument(model_path + ": not a regular file or a directory");
  }
  if (dir) {
    fs::create_directory_symlink(source, model_dir, ec);
  } else {
    fs::create_directory(model_dir, ec);
    if (!ec) fs::create_symlink(source, model_dir / source.filename(), ec);
  }
  if (ec) return IoError(model_dir.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

void AddTensorSets(StageContents* contents, py::handle self_tests, py::handle examples) {
  const CartonConfig& c = contents->config;
  std::size_t i = 0;
  for (py::handle t : self_tests) {
    const std::string what = "self_tests[" + std::to_string(i) + "]";
    SelfTest test;
    test.name = OptionalString(Field(t, "name"), what + ".name");
    test.description = OptionalString(Field(t, "description"), what + ".description");
    const std::string prefix = "self_test_" + std::to_string(i);
    test.inputs = AddTensors(contents, Field(t, "inputs"), prefix + "_in_", what + ".inputs",
                             c.inputs, false);
    py::object expected = Field(t, "expected_out");
    if (!expected.is_none()) {
      test.expected_out = AddTensors(contents, expected, prefix + "_out_", what + ".expected_out",
                                     c.outputs, false);
    }
    contents->config.self_tests.push_back(std::move(test));
    ++i;
  }
  i = 0;
  for (py::handle x : examples) {
    const std::string what = "examples[" + std::to_string(i) + "]";
    Example example;
    example.name = OptionalString(Field(x, "name"), what + ".name");
    example.description = OptionalString(Field(x, "description"), what + ".description");
    const std::string prefix = "example_" + std::to_string(i);
    example.inputs =
        AddTensors(contents, Field(x, "inputs"), prefix + "_in_", what + ".inputs", c.inputs, true);
    example.sample_out = AddTensors(contents, Field(x, "sample_out"), prefix + "_out_",
                                    what + ".sample_out", c.outputs, true);
    contents->config.examples.push_back(std::move(example));
    ++i;
  }
}

std::vector<PackSelfTest> PackSelfTestsFromPython(py::handle self_tests,
                                                  const CartonConfig& config) {
  std::vector<PackSelfTest> out;
  std::size_t i = 0;
  for (py::handle t : self_tests) {
    const std::string what = "self_tests[" + std::to_string(i++) + "]";
    // Named as they are given; the library renames them as it lays them
    // out.
    StageContents tensors;
    PackSelfTest test;
    test.name = OptionalString(Field(t, "name"), what + ".name");
    test.description = OptionalString(Field(t, "description"), what + ".description");
    AddTensors(&tensors, Field(t, "inputs"), "", what + ".inputs", config.inputs, false);
    test.inputs = std::move(tensors.tensor_data);
    py::object expected = Field(t, "expected_out");
    if (!expected.is_none()) {
      StageContents outputs;
      AddTensors(&outputs, expected, "", what + ".expected_out", config.outputs, false);
      test.expected_out = std::move(outputs.tensor_data);
    }
    out.push_back(std::move(test));
  }
  return out;
}

void AddMiscFiles(StageContents* contents, py::handle misc_files) {
  if (misc_files.is_none()) return;
  if (!PyDict_Check(misc_files.ptr())) {
    Raise(
        InvalidArgument("misc_files must be a dict of {name: bytes}, not " + TypeName(misc_files)));
  }
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(misc_files)) {
    if (!PyUnicode_Check(key.ptr())) {
      Raise(InvalidArgument("a misc_files name has type " + TypeName(key) + ", not str"));
    }
    const std::string name = py::cast<std::string>(key);
    if (!PyBytes_Check(value.ptr()) && !PyByteArray_Check(value.ptr()) &&
        !PyMemoryView_Check(value.ptr())) {
      Raise(InvalidArgument("misc_files[\"" + name + "\"] must be bytes, not " + TypeName(value)));
    }
    Status valid = manifest::ValidateEntryPath("misc/" + name);
    if (!valid.ok()) Raise(InvalidArgument("misc_files[\"" + name + "\"]: " + valid.message()));
    contents->misc_files.emplace_back(name, BytesOf(value));
  }
}

Result<StagedCarton> StagedCarton::Create(const std::string& parent, const std::string& model_path,
                                          const StageContents& contents) {
  CARTON_ASSIGN_OR_RETURN(std::string toml, WriteConfig(contents.config));
  for (const auto& [name, bytes] : contents.misc_files) {
    Status valid = manifest::ValidateEntryPath("misc/" + name);
    if (!valid.ok()) return InvalidArgument("misc file \"" + name + "\": " + valid.message());
  }
  std::string templ = (fs::path(parent) / ".carton-stage-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) return Errno(parent + ": cannot create a directory");
  StagedCarton stage(templ);
  const fs::path root(stage.path());
  CARTON_RETURN_IF_ERROR(WriteBytes((root / "carton.toml").string(), toml));
  CARTON_RETURN_IF_ERROR(StageModel(model_path, root / "model"));
  if (!contents.tensor_data.tensors.empty()) {
    CARTON_RETURN_IF_ERROR(
        WriteTensorDataDir((root / "tensor_data").string(), contents.tensor_data));
  }
  for (const auto& [name, bytes] : contents.misc_files) {
    const fs::path dest = root / "misc" / name;
    std::error_code ec;
    fs::create_directories(dest.parent_path(), ec);
    if (ec) return IoError(dest.parent_path().string() + ": " + ec.message());
    CARTON_RETURN_IF_ERROR(WriteBytes(dest.string(), bytes));
  }
  return stage;
}

StagedCarton::StagedCarton(StagedCarton&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

StagedCarton& StagedCarton::operator=(StagedCarton&& other) noexcept {
  if (this != &other) {
    StagedCarton gone(std::move(*this));
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

StagedCarton::~StagedCarton() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);  // best effort: a leftover is a hidden temporary directory
}

}  // namespace carton::python
