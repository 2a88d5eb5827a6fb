// carton._carton: the native core of the `carton` Python package. The pure
// Python modules beside it (carton/*.py) give it its public shape; this
// module converts values and calls the library.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>

#include "bindings.h"
#include "carton/common/notice.h"
#include "carton/pybridge/errors.h"
#include "carton/pybridge/numpy_tensor.h"

namespace carton::python {

void Raise(const Status& status) { pybridge::ThrowStatus(status); }

namespace {

// Registers the package's exception classes: {"corrupt": Corrupt, ...},
// keyed by StatusCodeName.
void SetExceptionTypes(const py::dict& types) {
  for (auto [key, type] : types) {
    const std::string name = py::cast<std::string>(key);
    bool known = false;
    for (int c = static_cast<int>(StatusCode::kInvalidArgument);
         c <= static_cast<int>(StatusCode::kModelError); ++c) {
      const auto code = static_cast<StatusCode>(c);
      if (StatusCodeName(code) == name) {
        pybridge::SetExceptionType(code, type);
        known = true;
      }
    }
    if (!known) throw py::value_error("no status code is called \"" + name + "\"");
  }
}

// The library's notices (carton/common/notice.h) as Python warnings
// (RuntimeWarning), which users see or filter as any other. A warning the
// filters turn into an error cannot propagate from here and is dropped.
void NoticeAsWarning(std::string_view text) {
  if (_Py_IsFinalizing()) return;
  py::gil_scoped_acquire gil;
  const std::string message(text);
  if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) PyErr_Clear();
}

}  // namespace
}  // namespace carton::python

PYBIND11_MODULE(_carton, m) {
  namespace cp = carton::python;
  m.doc() = "The native core of the carton package (use the `carton` package, not this module).";
  carton::Status numpy = carton::pybridge::Init();
  if (!numpy.ok()) throw pybind11::import_error(numpy.message());
  m.def("set_exception_types", &cp::SetExceptionTypes, pybind11::arg("types"),
        "Registers the exception class raised for each status code name.");
  carton::SetNoticeSink(&cp::NoticeAsWarning);
  cp::BindCartons(m);
  cp::BindModel(m);
  cp::BindSafetensors(m);
}
