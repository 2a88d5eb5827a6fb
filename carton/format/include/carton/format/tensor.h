// Tensor: a named, typed, shaped tensor as the loader, runners and their
// callers hand it around (loader::Tensor and runner::Tensor name this
// type); NestedTensor: a ragged tensor, an ordered list of tensors.
//
// Numeric tensors are a byte view (little-endian, C order) plus an optional
// shared `owner` that keeps the bytes alive; string tensors hold their
// strings. A Tensor is cheap to copy: copies share the owner. Whoever
// produces a Tensor without an owner says what its bytes borrow from (for
// LoadedCarton: the LoadedCarton itself).
//
// Thread-safety: plain value; the bytes are never written through a Tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/format/data_type.h"
#include "carton/safetensors/tensor.h"

namespace carton {

struct Tensor {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<std::uint64_t> shape;
  ByteView data;                      // numeric dtypes: numel * size bytes
  std::vector<std::string> strings;   // kString: numel strings, C order
  std::shared_ptr<const void> owner;  // keeps `data` alive when set

  // A numeric tensor owning `bytes`.
  static Tensor Owned(std::string name, DataType dtype, std::vector<std::uint64_t> shape,
                      std::vector<std::byte> bytes);
  // A numeric tensor borrowing `bytes`; `owner` (optional) keeps them alive.
  static Tensor View(std::string name, DataType dtype, std::vector<std::uint64_t> shape,
                     ByteView bytes, std::shared_ptr<const void> owner = nullptr);
  // A string tensor.
  static Tensor Strings(std::string name, std::vector<std::uint64_t> shape,
                        std::vector<std::string> strings);

  // Product of the dimensions (1 for a scalar); nullopt on overflow.
  std::optional<std::uint64_t> numel() const;

  // OK when the element count matches the shape: numel * size bytes for
  // numeric tensors, numel strings for kString. kInvalidArgument naming the
  // tensor otherwise.
  Status Validate() const;

  // A safetensors view of a numeric tensor (borrows from *this).
  // REQUIRES: dtype != kString.
  safetensors::TensorView AsSafetensorsView() const;
};

// A shape as messages write it: "[2, 3]", "[]" for a scalar.
std::string ShapeText(const std::vector<std::uint64_t>& shape);

// A nested (ragged) tensor, as tensor_data stores it (dtype = "nested"):
// its inner tensors in order, each non-nested, of any shape and dtype.
// Copies share the inner tensors' bytes.
struct NestedTensor {
  std::string name;
  std::vector<Tensor> inner;
};

}  // namespace carton
