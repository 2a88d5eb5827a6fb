// safetensors tensors <-> numpy arrays, for the `carton.safetensors`
// package: dtype names both ways and zero-copy numpy views of the tensors
// of a safetensors::File.
//
// Ownership: SafetensorsViewToNumpy borrows the tensor's bytes; the array's
// base is the object the caller gives, which must keep those bytes mapped
// for as long as it lives (numpy keeps the base alive as long as the array
// and every view of it).
//
// GIL: every function here REQUIRES the calling thread to hold the GIL, and
// Init() (numpy_tensor.h) to have succeeded.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/safetensors/dtype.h"
#include "carton/safetensors/tensor.h"

namespace carton::pybridge {

namespace py = pybind11;

// The numpy dtype of a safetensors dtype: BOOL "|b1", U8 "|u1", I8 "|i1",
// I16/U16/F16 "<i2"/"<u2"/"<f2", I32/U32/F32, I64/U64/F64, C64 "<c8".
// nullopt for the dtypes numpy 1.x has no type for: BF16, the F8, F6 and F4
// types.
std::optional<std::string> NumpyTypeString(safetensors::Dtype d);

// The safetensors dtype of a dtype name as numpy and torch spell it, which
// is what the reference's `serialize` takes: "bool", "int8" ... "uint64",
// "float16", "float32", "float64", "bfloat16", "complex64", "float8_e4m3fn",
// "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu";
// the header spellings ("F32", "BF16", ...) are accepted too. nullopt for
// any other name.
std::optional<safetensors::Dtype> SafetensorsDtypeFromName(std::string_view name);

// A read-only numpy array of the tensor's dtype and shape over its bytes (no
// copy; the bytes may be unaligned, which numpy handles), with `base` as the
// array's base. Errors: kUnsupported naming the tensor and its dtype when
// numpy has no type for it; kInvalidArgument when a dimension does not fit
// a Py_ssize_t.
Result<py::array> SafetensorsViewToNumpy(const safetensors::TensorView& tensor, py::handle base);

}  // namespace carton::pybridge
