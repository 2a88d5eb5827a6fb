// Private: the parts of the extension module `carton._carton`, each adding
// its functions and classes to the module. module.cc calls them in order.
//
// Every binding converts Python values to library types, calls the library
// with the GIL released, and converts the result back; errors become the
// package's exceptions (errors.h of the bridge). No format rule lives here.
#pragma once

#include <pybind11/pybind11.h>

#include "carton/common/status.h"

namespace carton::python {

namespace py = pybind11;

// Raises `status` (not OK) as the package's CartonError subclass for its
// code.
[[noreturn]] void Raise(const Status& status);

// The value of `result`, or raises its Status.
template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) Raise(result.status());
  return std::move(result).value();
}
inline void Check(const Status& status) {
  if (!status.ok()) Raise(status);
}

// Runs `f` (which must not touch Python objects) with the GIL released, so
// other Python threads run meanwhile, and returns its result.
template <typename F>
auto WithoutGil(F&& f) {
  py::gil_scoped_release nogil;
  return f();
}

void BindCartons(py::module_& m);      // info, hash, verify, pack, shrink
void BindModel(py::module_& m);        // Model: load, infer, self_test
void BindSafetensors(py::module_& m);  // safe_open's file, serialize, deserialize

}  // namespace carton::python
