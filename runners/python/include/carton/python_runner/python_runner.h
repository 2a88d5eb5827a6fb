// The Python runner (runner name "python"): runs model code written in
// Python in an embedded CPython, as the original implementation's Python
// runner does. runners/python/FORMAT.md has the whole contract; in short:
//
//   [runner.opts] entrypoint_package = "main"   # a module in model/
//                 entrypoint_fn = "get_model"   # returns the model object
//                 "model.scale" = 2             # -> get_model(scale=2)
//                 python_deps = "lockfile"      # or "system"
//
// Load puts model/ first on sys.path, then the wheels that
// model/.carton/carton.lock locks for this environment (fetched and
// unpacked once per machine), imports the module and calls the function.
// Infer calls the model's infer_with_tensors(dict) -> dict, or
// seal(dict) -> handle then infer_with_handle(handle) -> dict, with numpy
// arrays (carton/pybridge/numpy_tensor.h): numeric inputs are read-only
// views of the caller's bytes, valid for the call only. A model that keeps
// an input past the call is detected at the next call and warned about on
// stderr, and the runner copies inputs from then on.
//
// Identity: runner_name "python", framework_version the interpreter's
// major.minor.micro ("3.11.2"), runner_compat_version 1.
//
// One PythonRunner per process (it owns the embedded interpreter).
// Thread-safety: as the SDK requires, Load once, then Infer from one
// thread at a time.
#pragma once

#include <memory>

#include "carton/runner/runner.h"

namespace carton::python_runner {

std::unique_ptr<runner::Runner> MakePythonRunner();

}  // namespace carton::python_runner
