// The element types of carton v1 (carton.toml inputs/outputs, tensor_data).
//
// Spelled as in carton.toml: float32, float64, string, int8 ... uint64.
// Numeric tensors are little-endian, C order; string tensors hold UTF-8
// strings. `nested` exists only in tensor_data/index.toml and is handled
// there.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "carton/safetensors/dtype.h"

namespace carton {

enum class DataType : std::uint8_t {
  kFloat32,
  kFloat64,
  kString,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
};

std::span<const DataType> AllDataTypes();
std::string_view DataTypeName(DataType t);
std::optional<DataType> ParseDataType(std::string_view name);
// Bytes per element; 0 for kString.
unsigned DataTypeSize(DataType t);

// The safetensors dtype of a numeric type; nullopt for kString.
std::optional<safetensors::Dtype> ToSafetensorsDtype(DataType t);
// The carton type of a safetensors dtype; nullopt if carton has none.
std::optional<DataType> FromSafetensorsDtype(safetensors::Dtype d);

}  // namespace carton
