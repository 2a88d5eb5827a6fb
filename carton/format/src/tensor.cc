#include "carton/format/tensor.h"

namespace carton {

std::string ShapeText(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor Tensor::Owned(std::string name, DataType dtype, std::vector<std::uint64_t> shape,
                     std::vector<std::byte> bytes) {
  auto owned = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = ByteView(owned->data(), owned->size());
  t.owner = std::move(owned);
  return t;
}

Tensor Tensor::View(std::string name, DataType dtype, std::vector<std::uint64_t> shape,
                    ByteView bytes, std::shared_ptr<const void> owner) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = bytes;
  t.owner = std::move(owner);
  return t;
}

Tensor Tensor::Strings(std::string name, std::vector<std::uint64_t> shape,
                       std::vector<std::string> strings) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = DataType::kString;
  t.shape = std::move(shape);
  t.strings = std::move(strings);
  return t;
}

std::optional<std::uint64_t> Tensor::numel() const { return safetensors::CheckedNumel(shape); }

Status Tensor::Validate() const {
  auto n = numel();
  std::string where = "tensor \"" + name + "\" (" + std::string(DataTypeName(dtype)) + " " +
                      safetensors::ShapeToString(shape) + ")";
  if (!n) return InvalidArgument(where + ": element count overflows");
  if (dtype == DataType::kString) {
    if (strings.size() != *n) {
      return InvalidArgument(where + ": " + std::to_string(strings.size()) + " strings, needs " +
                             std::to_string(*n));
    }
    return Status::Ok();
  }
  std::uint64_t bytes = 0;
  if (!CheckedMul(*n, DataTypeSize(dtype), &bytes)) {
    return InvalidArgument(where + ": byte size overflows");
  }
  if (data.size() != bytes) {
    return InvalidArgument(where + ": " + std::to_string(data.size()) + " bytes, needs " +
                           std::to_string(bytes));
  }
  return Status::Ok();
}

safetensors::TensorView Tensor::AsSafetensorsView() const {
  safetensors::TensorView v;
  v.name = name;
  v.dtype = ToSafetensorsDtype(dtype).value_or(safetensors::Dtype::kU8);
  v.shape = shape;
  v.data = data;
  return v;
}

}  // namespace carton
