// The data files of tensor_data/: .bin (numeric) and .toml (strings).

#include <string>

#include "carton/common/quote.h"
#include "carton/common/toml_string.h"
#include "carton/format/tensor_data.h"
#include "carton/safetensors/tensor.h"
#include "tensor_data_internal.h"
#include "toml_util.h"

namespace carton {
namespace {

using format_internal::At;
using format_internal::IsValidUtf8;
using format_internal::ParseToml;

std::string Label(const TensorDataEntry& entry) { return "tensor " + QuoteForMessage(entry.name); }

Status DecodeStrings(const TensorDataEntry& entry, const std::string& source, std::uint64_t numel,
                     ByteView bytes, std::uint64_t max_size, TensorValue* out) {
  if (bytes.size() > max_size) {
    return Corrupt(source + ": " + Label(entry) + ": " + std::to_string(bytes.size()) +
                   " bytes, more than the limit of " + std::to_string(max_size));
  }
  CARTON_ASSIGN_OR_RETURN(toml::table doc, ParseToml(AsChars(bytes), source));
  const toml::node* data = doc.get("data");
  if (data == nullptr) return Corrupt(source + ": " + Label(entry) + ": missing \"data\"");
  const toml::array* items = data->as_array();
  if (items == nullptr) {
    return Corrupt(At(source, data->source(), Label(entry) + ": data is not an array"));
  }
  if (items->size() != numel) {
    return Corrupt(At(source, data->source(),
                      Label(entry) + ": data has " + std::to_string(items->size()) +
                          " strings but shape " + safetensors::ShapeToString(entry.shape) +
                          " needs " + std::to_string(numel)));
  }
  out->strings.reserve(items->size());
  for (std::size_t k = 0; k < items->size(); ++k) {
    const toml::node& item = (*items)[k];
    if (!item.is_string()) {
      return Corrupt(At(source, item.source(),
                        Label(entry) + ": data[" + std::to_string(k) + "] is not a string"));
    }
    out->strings.push_back(item.as_string()->get());
  }
  return Status::Ok();
}

}  // namespace

namespace format_internal {

Status CheckBinSize(const TensorDataEntry& entry, std::uint64_t size) {
  const std::string source = "tensor_data/" + entry.file;
  std::optional<std::uint64_t> numel = safetensors::CheckedNumel(entry.shape);
  std::uint64_t need = 0;
  if (!numel || !CheckedMul(*numel, DataTypeSize(*entry.dtype), &need)) {
    return Corrupt(source + ": " + Label(entry) + ": shape " +
                   safetensors::ShapeToString(entry.shape) + " overflows 64 bits");
  }
  if (size != need) {
    return Corrupt(source + ": " + Label(entry) + ": " + std::string(DataTypeName(*entry.dtype)) +
                   " " + safetensors::ShapeToString(entry.shape) + " needs " +
                   std::to_string(need) + " bytes but the file has " + std::to_string(size));
  }
  return Status::Ok();
}

}  // namespace format_internal

Result<TensorValue> DecodeTensor(const TensorDataEntry& entry, ByteView file_bytes,
                                 const TensorDataLimits& limits) {
  if (entry.nested()) {
    return InvalidArgument(Label(entry) + " is nested and has no data file");
  }
  const std::string source = "tensor_data/" + entry.file;
  std::optional<std::uint64_t> numel = safetensors::CheckedNumel(entry.shape);
  if (!numel) {
    return Corrupt(source + ": " + Label(entry) + ": shape " +
                   safetensors::ShapeToString(entry.shape) + " overflows 64 bits");
  }
  TensorValue value;
  value.name = entry.name;
  value.dtype = *entry.dtype;
  value.shape = entry.shape;
  if (value.dtype == DataType::kString) {
    CARTON_RETURN_IF_ERROR(
        DecodeStrings(entry, source, *numel, file_bytes, limits.max_string_file_size, &value));
    return value;
  }
  CARTON_RETURN_IF_ERROR(format_internal::CheckBinSize(entry, file_bytes.size()));
  value.data.assign(file_bytes.begin(), file_bytes.end());
  return value;
}

Result<std::string> EncodeStrings(std::span<const std::string> strings) {
  std::string out = "data = [";
  for (std::size_t k = 0; k < strings.size(); ++k) {
    if (!IsValidUtf8(strings[k])) {
      return InvalidArgument("string " + std::to_string(k) + " is not valid UTF-8");
    }
    out.append(k == 0 ? "\n    " : "    ");
    AppendTomlString(&out, strings[k]);
    out.append(",\n");
  }
  out.append("]\n");
  return out;
}

}  // namespace carton
