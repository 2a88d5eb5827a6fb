#include "carton/safetensors/tensor.h"

namespace carton::safetensors {

std::uint64_t TensorView::numel() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::uint64_t TensorView::byte_size() const { return numel() * DtypeBits(dtype) / 8; }

std::optional<std::uint64_t> CheckedNumel(std::span<const std::uint64_t> shape) {
  std::uint64_t n = 1;
  for (auto d : shape) {
    if (!CheckedMul(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::string ShapeToString(std::span<const std::uint64_t> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

}  // namespace carton::safetensors
