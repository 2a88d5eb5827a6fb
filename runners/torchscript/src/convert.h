// Conversions between carton tensors (Tensor) and torch values.
//
// Numeric types map one to one where torch has the type: float32 <-> Float,
// float64 <-> Double, int8 <-> Char, int16 <-> Short, int32 <-> Int,
// int64 <-> Long, uint8 <-> Byte. Those convert without copying: an input
// becomes a torch tensor over the carton tensor's bytes (kept alive by the
// tensor's owner), an output a carton view of the torch tensor's storage
// (kept alive by a reference to it). Torch 1.13 has no uint16, uint32 or
// uint64: those inputs are widened (uint16 -> Int, uint32 -> Long, uint64 ->
// Long when every value fits), which copies, and outputs declared with those
// types are narrowed back with a range check.
//
// String tensors: a rank-0 string tensor is a TorchScript `str`, a rank-1
// one a `List[str]`; outputs of those types come back the same way.
// Python scalars returned by a model become rank-0 tensors (FromIValue).
#pragma once

#include <torch/script.h>

#include <optional>
#include <string>

#include "carton/common/status.h"
#include "carton/format/data_type.h"
#include "carton/format/tensor.h"

namespace carton::torchscript {

// The torch type holding `t` without loss; nullopt for kString.
std::optional<c10::ScalarType> TorchTypeFor(DataType t);

// The carton type of a torch type; nullopt when carton has none (bool,
// half, bfloat16, complex, quantized types).
std::optional<DataType> CartonTypeFor(c10::ScalarType t);

// A numeric input as a torch tensor (zero-copy where the type maps one to
// one and the bytes are aligned for it), or a string input as `str` or
// `List[str]`. Errors: kInvalidArgument naming the tensor (a string tensor
// of rank above 1, a uint64 value above the int64 range, a shape a torch
// tensor cannot have).
Result<c10::IValue> ToIValue(const Tensor& tensor);

// The TorchScript type of `value` as a model's source spells it
// ("Dict[str, Tensor]", "List[Union[int, str]]", "NoneType"), for messages.
std::string TorchScriptTypeName(const c10::IValue& value);

// An output value named `name`: a tensor; a `str` (a rank-0 string tensor);
// a List[str], or any list holding only strings (rank 1); an `int`, `float`
// or `bool` (a rank-0 int64, float64 or uint8 0/1 tensor). Bool tensors
// become uint8 0/1 (carton has no bool dtype). `declared` (when the carton
// declares the output) is the type it must have: torch types that are the
// widened form of it are narrowed back with a range check.
// Errors, naming the output: kUnsupported for any other value (with its
// TorchScript type), and for tensors carton has no dtype or layout for;
// kInvalidArgument for values out of the declared type's range. Torch may
// throw (c10::Error) on tensors in unusual states; callers catch.
Result<Tensor> FromIValue(const std::string& name, const c10::IValue& value,
                          std::optional<DataType> declared);

}  // namespace carton::torchscript
