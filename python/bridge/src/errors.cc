#include "carton/pybridge/errors.h"

#include <array>
#include <string>
#include <vector>

namespace carton::pybridge {
namespace {

constexpr std::size_t kCodes = static_cast<std::size_t>(StatusCode::kModelError) + 1;

// Registered exception types, strong references never released: they are
// used until the process ends, after the interpreter may be gone.
std::array<PyObject*, kCodes>& Registry() {
  static auto* types = new std::array<PyObject*, kCodes>{};
  return *types;
}

bool Matches(const py::error_already_set& e, PyObject* type) { return e.matches(type); }

StatusCode CodeFor(const py::error_already_set& e) {
  // An exception raised by ThrowStatus (or the package's own classes)
  // says its code.
  if (e.value() && py::hasattr(e.value(), "code")) {
    py::object code = e.value().attr("code");
    if (py::isinstance<py::str>(code)) {
      const std::string name = code.cast<std::string>();
      for (std::size_t i = 1; i < kCodes; ++i) {
        if (StatusCodeName(static_cast<StatusCode>(i)) == name) return static_cast<StatusCode>(i);
      }
    }
  }
  if (Matches(e, PyExc_ModuleNotFoundError) || Matches(e, PyExc_FileNotFoundError)) {
    return StatusCode::kNotFound;
  }
  if (Matches(e, PyExc_NotImplementedError)) return StatusCode::kUnsupported;
  if (Matches(e, PyExc_ConnectionError) || Matches(e, PyExc_TimeoutError)) {
    return StatusCode::kNetworkError;
  }
  if (Matches(e, PyExc_OSError)) return StatusCode::kIoError;
  if (Matches(e, PyExc_ValueError) || Matches(e, PyExc_TypeError) ||
      Matches(e, PyExc_LookupError) || Matches(e, PyExc_AttributeError) ||
      Matches(e, PyExc_ImportError)) {
    return StatusCode::kInvalidArgument;
  }
  return StatusCode::kInternal;
}

// str(x), never throwing.
std::string SafeStr(py::handle x) {
  try {
    return py::str(x).cast<std::string>();
  } catch (const std::exception&) {
    PyErr_Clear();
    return "<unprintable " + std::string(Py_TYPE(x.ptr())->tp_name) + ">";
  }
}

// The last `n` lines of the formatted stack of `trace`, without the
// frames of Python's import machinery and without position markers.
std::vector<std::string> TracebackTail(py::handle trace, std::size_t n) {
  std::vector<std::string> lines;
  if (!trace || trace.is_none() || n == 0) return lines;
  try {
    py::list parts = py::module_::import("traceback").attr("format_tb")(trace);
    bool skip_source = false;
    for (py::handle part : parts) {
      std::string text = part.cast<std::string>();
      std::size_t start = 0;
      while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        // Python 3.11's position markers ("    ^^^^~~~") add nothing to a message.
        if (line.find_first_not_of(" ^~") == std::string::npos) continue;
        const bool frame = line.rfind("  File ", 0) == 0;
        if (frame) skip_source = line.find("<frozen importlib") != std::string::npos;
        if (!skip_source) lines.push_back(std::move(line));
      }
    }
  } catch (const std::exception&) {
    PyErr_Clear();
    return {};
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

}  // namespace

namespace {

// The exception's type name ("ValueError") and str(exception).
ModelException Raised(const py::error_already_set& error) {
  ModelException raised{"exception", ""};
  if (error.type()) {
    py::object name = py::getattr(error.type(), "__name__", py::none());
    if (!name.is_none()) raised.type = SafeStr(name);
  }
  if (error.value()) raised.message = SafeStr(error.value());
  return raised;
}

}  // namespace

Status StatusFromPython(const py::error_already_set& error, std::string_view context,
                        std::size_t traceback_lines) {
  const ModelException raised = Raised(error);
  std::string message(context);
  if (!message.empty()) message += ": ";
  message += raised.type;
  if (!raised.message.empty()) message += ": " + raised.message;
  for (const std::string& line : TracebackTail(error.trace(), traceback_lines)) {
    message += "\n" + line;
  }
  return Status(CodeFor(error), std::move(message));
}

Status ModelErrorFromPython(const py::error_already_set& error, std::string_view context,
                            std::size_t traceback_lines) {
  Status status = StatusFromPython(error, context, traceback_lines);
  return ModelError(status.message(), Raised(error));
}

py::object ExceptionTypeFor(StatusCode code) {
  const auto i = static_cast<std::size_t>(code);
  if (i < kCodes && Registry()[i] != nullptr)
    return py::reinterpret_borrow<py::object>(Registry()[i]);
  switch (code) {
    case StatusCode::kNotFound:
      return py::reinterpret_borrow<py::object>(PyExc_FileNotFoundError);
    case StatusCode::kIoError:
      return py::reinterpret_borrow<py::object>(PyExc_OSError);
    case StatusCode::kNetworkError:
      return py::reinterpret_borrow<py::object>(PyExc_ConnectionError);
    case StatusCode::kInternal:
    case StatusCode::kModelError:
    case StatusCode::kOk:
      return py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorrupt:
    case StatusCode::kUnsupported:
      break;
  }
  return py::reinterpret_borrow<py::object>(PyExc_ValueError);
}

void SetExceptionType(StatusCode code, py::handle type) {
  const auto i = static_cast<std::size_t>(code);
  if (i >= kCodes) return;
  PyObject*& slot = Registry()[i];
  Py_XDECREF(slot);
  slot = type.inc_ref().ptr();
}

void ThrowStatus(const Status& status) {
  py::dict attributes;
  if (const ModelException* raised = status.model_exception(); raised != nullptr) {
    attributes["exception_type"] = py::str(raised->type);
    attributes["exception_message"] = py::str(raised->message);
  }
  ThrowStatusAs(status, ExceptionTypeFor(status.code()), attributes);
}

void ThrowStatusAs(const Status& status, py::handle type, const py::dict& attributes) {
  py::object exception = type(status.message());
  try {
    exception.attr("code") = std::string(StatusCodeName(status.code()));
    for (auto [key, value] : attributes) py::setattr(exception, key, value);
  } catch (const py::error_already_set&) {
    // A type whose instances take no attributes: the message still tells.
  }
  PyErr_SetObject(type.ptr(), exception.ptr());
  throw py::error_already_set();
}

}  // namespace carton::pybridge
