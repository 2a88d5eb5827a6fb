// Private: the contents `carton.pack` and `carton.load_unpacked` build
// from their arguments (carton.toml's config, the self-tests' and examples'
// tensors, misc files), and for load_unpacked a carton directory assembled
// from them, which the loader loads (loader::Load). carton.pack packs from
// a PackDescription instead: nothing is staged.
//
// For load_unpacked, the self-tests' and examples' tensors are written into
// the staged tensor_data/ with names that cannot collide:
// "self_test_<i>_in_<name>", "self_test_<i>_out_<name>",
// "example_<i>_in_<name>", "example_<i>_out_<name>"; an example value given
// as bytes is a misc file of the same name. carton.pack gives its
// self-tests to the library instead (PackDescription::self_tests), which
// lays them out as `carton pack --self-test` does.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "carton/carton/pack.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"

namespace carton::python {

namespace py = pybind11;

struct StageContents {
  CartonConfig config;  // self_tests and examples refer to tensor_data and misc
  TensorData tensor_data;
  std::vector<std::pair<std::string, std::string>> misc_files;  // path under misc/, bytes
};

// Adds the self-tests ([{"name", "description", "inputs": {name: value},
// "expected_out": {...} or None}]) and examples (the same with
// "sample_out") to `contents`: their values are converted with the
// bridge's TensorFromPython (the declared dtype of the input or output of
// that name as the hint) and copied. Raises InvalidArgument naming the
// self-test and tensor for a value that is not a tensor. GIL: REQUIRES it.
void AddTensorSets(StageContents* contents, py::handle self_tests, py::handle examples);

// The self-tests (as AddTensorSets takes them) as the library packs them:
// each tensor named as the input or output it is, converted with the
// declared dtype of that name as the hint and copied. Raises
// InvalidArgument naming the self-test and tensor. GIL: REQUIRES it.
std::vector<PackSelfTest> PackSelfTestsFromPython(py::handle self_tests,
                                                  const CartonConfig& config);

// Adds {name: bytes} as files misc/<name>. Raises InvalidArgument for a
// name that is not a valid relative path or a value that is not bytes.
// GIL: REQUIRES it.
void AddMiscFiles(StageContents* contents, py::handle misc_files);

// A directory `<parent>/.carton-stage-XXXXXX` holding the carton, removed
// (with everything in it) when this object is destroyed. Move-only.
class StagedCarton {
 public:
  // Writes carton.toml (WriteConfig), model/ (a symlink to `model_path`
  // when it is a directory, else a directory holding a symlink to the
  // file: the model is used in place), tensor_data/ and misc/. Errors:
  // kNotFound (no model_path), kInvalidArgument (the config, tensor data or
  // a misc name is invalid), kIoError. GIL: no Python calls; call it with
  // the GIL released.
  static Result<StagedCarton> Create(const std::string& parent, const std::string& model_path,
                                     const StageContents& contents);

  StagedCarton(StagedCarton&& other) noexcept;
  StagedCarton& operator=(StagedCarton&& other) noexcept;
  StagedCarton(const StagedCarton&) = delete;
  StagedCarton& operator=(const StagedCarton&) = delete;
  ~StagedCarton();

  const std::string& path() const { return path_; }

 private:
  explicit StagedCarton(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace carton::python
