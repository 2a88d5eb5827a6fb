// Private: carton.toml's CartonConfig <-> the plain Python values (dicts,
// lists, str, int, None) that the package's dataclasses are built from.
//
// A config as Python: {"spec_version", "model_name", "short_description",
// "model_description", "license", "repository", "homepage",
// "required_platforms": [str], "inputs"/"outputs": [spec], "self_tests":
// [{"name", "description", "inputs": {name: ref}, "expected_out": {...} or
// None}], "examples": [{"name", "description", "inputs", "sample_out"}],
// "runner": {"runner_name", "required_framework_version",
// "runner_compat_version", "opts": {key: bool/int/float/str}}}.
// A spec: {"name", "dtype" (carton's name, "float32"), "shape",
// "description", "internal_name"}; a shape is None (any shape, "*"), a str
// (a symbol for the whole shape) or a list of dimensions, each an int, a
// str (a symbol) or None (any size, "*").
//
// GIL: every function REQUIRES it.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <string>

#include "carton/format/config.h"

namespace carton::python {

namespace py = pybind11;

py::dict ConfigToPython(const CartonConfig& config);
py::dict SpecToPython(const TensorSpec& spec);
py::object OptToPython(const RunnerOpt& opt);

// The fields of `config` other than self_tests and examples, as above.
// Raises InvalidArgument naming the field for a value of the wrong type
// (ValidateConfig, called later by whoever writes the config, checks the
// values).
CartonConfig ConfigFromPython(const py::dict& config);

// Runner options {key: bool/int/float/str} as RunnerOpts. Raises
// InvalidArgument for another type. None gives no options.
std::map<std::string, RunnerOpt> OptsFromPython(py::handle opts);

// Runner options as the text of `--opt KEY=VALUE` (true/false, decimal
// integers, floats as Python's repr, strings as they are), which runners
// parse back with runner::ParseRunnerOpt.
std::map<std::string, std::string> OptsAsText(const std::map<std::string, RunnerOpt>& opts);

// An optional str field: None (or absent) gives nullopt. Raises
// InvalidArgument naming `what` for a non-str.
std::optional<std::string> OptionalString(py::handle value, const std::string& what);

}  // namespace carton::python
