// Carton tensors <-> Python objects (numpy arrays, numbers, strings, lists):
// the one conversion layer shared by the Python runner (which embeds
// CPython) and the `carton` Python package (an extension module).
//
// This is the module whose public header speaks pybind11 by design: it is
// linked only by code that already lives inside a Python interpreter.
//
// GIL: every function here REQUIRES the calling thread to hold the GIL of
// an initialized interpreter, and Init() to have succeeded.
//
// Ownership, carton -> Python (TensorToPython):
//   - numeric, ArrayMode::kView: a read-only numpy array over the tensor's
//     bytes, no copy. The array's base is a capsule holding a copy of
//     `tensor.owner`, so the bytes stay mapped as long as the array or any
//     view of it lives. With a null owner the caller keeps the bytes alive
//     for as long as Python can reach the array; the bridge cannot. Alive is
//     not unchanged: a producer that reuses its memory (the serve protocol's
//     arenas do, for the next request) changes what such an array shows, so
//     code that keeps an input past the call that received it must copy it.
//   - numeric, ArrayMode::kWritableView: the same, but writable. Only for
//     bytes that are mapped writable and that nothing else reads or reuses
//     while `tensor.owner` lives (RunnerProcess::Infer's outputs).
//   - numeric, ArrayMode::kCopy: a writable array owning a copy.
//   - string: a new numpy array of dtype object holding Python `str`, of
//     the tensor's shape (a rank-0 tensor gives a 0-d array).
// Ownership, Python -> carton (TensorFromPython):
//   - a numeric array that is C-contiguous, aligned and little-endian
//     becomes a Tensor viewing the array's memory, no copy; the Tensor's
//     owner holds a reference to the array. Releasing that owner takes the
//     GIL itself (any thread may drop the Tensor), but it must happen while
//     the interpreter is alive: after finalization the reference is leaked,
//     never released. Any other numeric value is converted with one copy.
//   - strings are copied (UTF-8).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/format/data_type.h"
#include "carton/format/tensor.h"

namespace carton::pybridge {

namespace py = pybind11;

// Imports numpy and caches what the conversions use. Call once the
// interpreter runs and sys.path is final: the numpy imported then is the
// one used. Later calls do nothing. Errors: kNotFound when numpy cannot be
// imported (with Python's message).
Status Init();

enum class ArrayMode {
  kView,          // numeric tensors: a read-only view of the tensor's bytes
  kWritableView,  // numeric tensors: a writable view (see above for when)
  kCopy,          // numeric tensors: a writable copy
};

// A numeric tensor as a numpy array of the matching dtype (float32, ...,
// uint64; little-endian) and shape; a string tensor as an object array of
// str. Errors: kInvalidArgument naming the tensor when it is inconsistent
// (Validate()), a dimension does not fit a Py_ssize_t, or a string is not
// valid UTF-8.
Result<py::object> TensorToPython(const carton::Tensor& tensor, ArrayMode mode = ArrayMode::kView);

// {name: TensorToPython(tensor)} in the order given. Errors: as
// TensorToPython; kInvalidArgument for a name given twice.
Result<py::dict> TensorsToDict(const std::vector<carton::Tensor>& tensors,
                               ArrayMode mode = ArrayMode::kView);

// Converts a Python value into a tensor named `name`:
//   - numpy arrays (and objects numpy.asarray takes without guessing: any
//     object with __array__ or the buffer protocol, such as a CPU torch
//     tensor): float32, float64, int8...int64 and uint8...uint64 keep their
//     dtype (big-endian arrays are converted); bool becomes uint8 (0, 1);
//     str arrays ('U'), and object arrays holding only str, become string
//     tensors of the array's shape.
//   - numpy scalars: rank-0 tensors of their dtype, by the same rules.
//   - Python bool, int and float: rank-0 tensors. `hint`, when numeric,
//     picks the dtype (an int is range-checked; a float only becomes
//     float32 or float64); otherwise uint8 (bool), int64 (int), float64.
//   - str: a rank-0 string tensor.
//   - list or tuple: of str only, a rank-1 string tensor; of numbers (or
//     nested lists), numpy.asarray of it, with `hint` applied to Python
//     numbers as above; an empty list has dtype `hint` (float64 without).
// Errors: kInvalidArgument naming the tensor and the offending dtype or
// Python type: complex, float16, bytes, datetime and other numpy dtypes
// carton has no name for; object arrays holding anything but str; lists
// mixing str with other values; ints out of range; strings that are not
// encodable as UTF-8 (lone surrogates); anything else.
Result<carton::Tensor> TensorFromPython(std::string name, py::handle value,
                                        std::optional<DataType> hint = std::nullopt);

// Every item of a mapping (a dict, or any object with items()) whose keys
// are str, in its iteration order, through TensorFromPython with the hint
// `hints[name]` when present. Errors: as TensorFromPython; kInvalidArgument
// when `mapping` is not a mapping or a key is not a str.
Result<std::vector<carton::Tensor>> TensorsFromMapping(
    py::handle mapping, const std::map<std::string, DataType>& hints = {});

// The numpy dtype of a numeric carton type ("<f4", ...); nullopt for
// kString.
std::optional<std::string> NumpyTypeString(DataType t);

}  // namespace carton::pybridge
