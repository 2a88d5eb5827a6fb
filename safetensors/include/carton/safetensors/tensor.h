// TensorView (borrowed) and Tensor (owned): a named, typed, shaped byte range.
//
// A TensorView borrows its name, shape and bytes from whatever produced it
// (a safetensors::File, a Tensor, a caller's buffer); it is valid as long as
// that owner is alive and unchanged. Bytes are little-endian, C order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/safetensors/dtype.h"

namespace carton::safetensors {

struct TensorView {
  std::string_view name;
  Dtype dtype = Dtype::kU8;
  std::span<const std::uint64_t> shape;
  ByteView data;
  // Offset of `data` from the start of the file's data section (0 for
  // tensors that do not come from a file).
  std::uint64_t data_offset = 0;

  // Product of the dimensions (1 for a 0-rank tensor). REQUIRES: it fits in
  // 64 bits, as checked for every view a File hands out.
  std::uint64_t numel() const;
  // Size of the tensor's bytes, numel() x bits / 8: data.size() when the
  // bytes are in memory, and also for a File read from a source, whose
  // views have no data. REQUIRES: as for numel(), and a whole number of
  // bytes.
  std::uint64_t byte_size() const;
};

// An owned tensor. Movable and copyable (it is plain data).
struct Tensor {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> data;

  // Borrows from *this.
  TensorView view() const { return {name, dtype, shape, data, 0}; }
};

// Product of `shape`, or nullopt on 64-bit overflow.
std::optional<std::uint64_t> CheckedNumel(std::span<const std::uint64_t> shape);

// "[2, 3]"
std::string ShapeToString(std::span<const std::uint64_t> shape);

}  // namespace carton::safetensors
