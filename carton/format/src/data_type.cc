#include "carton/format/data_type.h"

#include <array>

namespace carton {
namespace {

struct Info {
  DataType type;
  std::string_view name;
  unsigned size;
  std::optional<safetensors::Dtype> st;
};

using safetensors::Dtype;
const std::array<Info, 11> kTypes = {{
    {DataType::kFloat32, "float32", 4, Dtype::kF32},
    {DataType::kFloat64, "float64", 8, Dtype::kF64},
    {DataType::kString, "string", 0, std::nullopt},
    {DataType::kInt8, "int8", 1, Dtype::kI8},
    {DataType::kInt16, "int16", 2, Dtype::kI16},
    {DataType::kInt32, "int32", 4, Dtype::kI32},
    {DataType::kInt64, "int64", 8, Dtype::kI64},
    {DataType::kUint8, "uint8", 1, Dtype::kU8},
    {DataType::kUint16, "uint16", 2, Dtype::kU16},
    {DataType::kUint32, "uint32", 4, Dtype::kU32},
    {DataType::kUint64, "uint64", 8, Dtype::kU64},
}};

const std::array<DataType, 11> kAll = [] {
  std::array<DataType, 11> a{};
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = kTypes[i].type;
  return a;
}();

}  // namespace

std::span<const DataType> AllDataTypes() { return kAll; }
std::string_view DataTypeName(DataType t) { return kTypes[static_cast<std::size_t>(t)].name; }
unsigned DataTypeSize(DataType t) { return kTypes[static_cast<std::size_t>(t)].size; }
std::optional<safetensors::Dtype> ToSafetensorsDtype(DataType t) {
  return kTypes[static_cast<std::size_t>(t)].st;
}

std::optional<DataType> ParseDataType(std::string_view name) {
  for (const auto& i : kTypes) {
    if (i.name == name) return i.type;
  }
  return std::nullopt;
}

std::optional<DataType> FromSafetensorsDtype(safetensors::Dtype d) {
  for (const auto& i : kTypes) {
    if (i.st == d) return i.type;
  }
  return std::nullopt;
}

}  // namespace carton
