// Python exceptions <-> carton::Status, for the Python runner and the
// `carton` Python package.
//
// Python -> Status: the exception's type picks the code (below), and the
// message keeps the exception and the last lines of its traceback, so an
// error raised deep in model code reads as
//   loading the model: main.get_model raised ValueError: no weights
//     File "/cache/.../model/main.py", line 7, in get_model
//       raise ValueError("no weights")
// Status -> Python: ThrowStatus raises the exception type registered for
// the code (builtin types unless SetExceptionType chose others, as the
// package does with its CartonError subclasses); the exception carries the
// message and a `code` attribute (StatusCodeName, "corrupt").
//
// GIL: every function REQUIRES the calling thread to hold the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string_view>

#include "carton/common/status.h"

namespace carton::pybridge {

namespace py = pybind11;

// Traceback lines kept in a Status message by default.
inline constexpr std::size_t kTracebackLines = 8;

// The Python exception held by `error` as a Status whose message is
// "<context>: <ExceptionType>: <str(exception)>" followed, one per line, by
// the last `traceback_lines` lines of its formatted traceback (frames of
// Python's import machinery and the "^^^^" position markers left out). Codes by exception type:
//   ModuleNotFoundError, FileNotFoundError            kNotFound
//   ValueError, TypeError, KeyError, IndexError,
//     AttributeError, ImportError, LookupError       kInvalidArgument
//   NotImplementedError                               kUnsupported
//   ConnectionError, TimeoutError                     kNetworkError
//   other OSError                                     kIoError
//   anything else (RuntimeError, MemoryError, ...)    kInternal
// An exception with a str attribute `code` naming a StatusCode (an
// exception ThrowStatus raised, coming back) keeps that code.
Status StatusFromPython(const py::error_already_set& error, std::string_view context,
                        std::size_t traceback_lines = kTracebackLines);

// As StatusFromPython, for an exception the model's own code raised: a
// kModelError status with the same message whose model_exception() is the
// exception's type name and str(exception).
Status ModelErrorFromPython(const py::error_already_set& error, std::string_view context,
                            std::size_t traceback_lines = kTracebackLines);

// The exception type ThrowStatus raises for `code`: the registered one,
// else kInvalidArgument ValueError, kNotFound FileNotFoundError, kCorrupt
// and kUnsupported ValueError, kIoError OSError, kNetworkError
// ConnectionError, kInternal and kModelError RuntimeError.
py::object ExceptionTypeFor(StatusCode code);

// Registers the exception type raised for `code` (held for the life of the
// process). REQUIRES: `type` is an exception class.
void SetExceptionType(StatusCode code, py::handle type);

// Raises `status` as ExceptionTypeFor(status.code())(status.message())
// with `code` set (and, for a model's exception, `exception_type` and
// `exception_message`), by throwing py::error_already_set (pybind11 turns
// it into the Python exception at the binding boundary).
// REQUIRES: !status.ok().
[[noreturn]] void ThrowStatus(const Status& status);

// As ThrowStatus, with the exception type `type` whatever the code (the
// package's safetensors layer raises SafetensorError for every failure),
// and each item of `attributes` set on the exception besides `code`.
// REQUIRES: !status.ok(); `type` is an exception class.
[[noreturn]] void ThrowStatusAs(const Status& status, py::handle type,
                                const py::dict& attributes = py::dict());

}  // namespace carton::pybridge
