// Numpy-style slicing of a tensor: `w[1:3, :, ::-1, 0]`.
//
// A slice is a list of SliceIndex, one per leading dimension:
//   - an integer selects one element and drops the dimension (negative
//     counts from the end; out of range is an error);
//   - a range start:stop:step follows numpy: each part optional, negative
//     start/stop count from the end and are clamped to the dimension,
//     negative steps walk backwards, step 0 is an error, empty ranges give a
//     zero-size dimension.
// Dimensions without an index are taken whole, so an empty slice selects the
// whole tensor (the scalar itself for a 0-rank tensor).
//
// Sub-byte dtypes (F4, F6_*) pack elements across byte boundaries, so only a
// slice that selects every element, in order, or no element at all can be
// read from them.
//
// Ownership: ReadSlice returns an owned Tensor; nothing here keeps a
// reference to its arguments. Thread-safety: pure functions; safe to call
// concurrently, including on the same TensorView.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/safetensors/tensor.h"

namespace carton::safetensors {

// The index for one dimension: an integer or a start:stop:step range.
struct SliceIndex {
  enum class Kind : std::uint8_t { kInteger, kRange };

  Kind kind = Kind::kRange;
  std::int64_t index = 0;  // kInteger only
  // kRange only. An absent part takes numpy's default: step 1; start and
  // stop the first and past-the-last index in the step's direction.
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
  std::optional<std::int64_t> step;

  static SliceIndex At(std::int64_t index) { return {Kind::kInteger, index, {}, {}, {}}; }
  static SliceIndex Range(std::optional<std::int64_t> start = {},
                          std::optional<std::int64_t> stop = {},
                          std::optional<std::int64_t> step = {}) {
    return {Kind::kRange, 0, start, stop, step};
  }
  // ":" (the whole dimension).
  static SliceIndex All() { return Range(); }

  bool operator==(const SliceIndex&) const = default;
};

// Parses the text between numpy's brackets, e.g. "1:3, :, ::-1, 0, -2:".
// Components are separated by commas; spaces and tabs around numbers,
// colons and commas are ignored; empty (or all-blank) text is the empty
// slice. Integers are decimal with an optional sign and must fit in 64 bits.
//
// Takes untrusted input. Errors: kInvalidArgument naming the 0-based byte
// position for an empty component ("1,,2", "1,"), a step of 0, an integer
// literal that overflows, more than two colons in a component, or any other
// character (ellipsis and newaxis are not supported).
Result<std::vector<SliceIndex>> ParseSlice(std::string_view text);

// The canonical text of a slice, e.g. "1:3, :, ::-1, 0"; ParseSlice reads it
// back to an equal list.
std::string SliceToString(std::span<const SliceIndex> indices);

// How one source dimension is read.
struct DimSelection {
  std::uint64_t start = 0;  // first source index read (0 when count is 0)
  std::int64_t step = 1;    // source index increment (1 when count <= 1)
  std::uint64_t count = 0;  // number of indices read
  bool dropped = false;     // an integer index: not an output dimension
};

struct SlicePlan {
  std::vector<DimSelection> dims;    // one per source dimension
  std::vector<std::uint64_t> shape;  // the output shape
  std::uint64_t numel = 0;           // output elements
  std::uint64_t byte_size = 0;       // output bytes
  // The output holds the source's bytes unchanged (every element, in
  // order), so it can be copied whole.
  bool whole = false;
};

// Resolves `indices` against `tensor`: the output shape and byte size, with
// checked arithmetic. Errors:
//   kInvalidArgument  more indices than dimensions; an integer index out of
//                     range; a step of 0; a view whose byte size does not
//                     match its dtype and shape (messages name the tensor,
//                     the dimension, the value and the dimension size).
//   kUnsupported      a sub-byte dtype with a slice that selects some but
//                     not all of its elements.
Result<SlicePlan> PlanSlice(const TensorView& tensor, std::span<const SliceIndex> indices);
// PlanSlice for a view whose bytes are not in memory (File::OpenSource):
// only its name, dtype and shape are read. The same errors, but for the
// byte size of `data`.
Result<SlicePlan> PlanSliceOfShape(const TensorView& tensor, std::span<const SliceIndex> indices);

// Copies the selected elements, in C order, into `out`. Errors: those of
// PlanSlice, and kInvalidArgument when out.size() differs from the plan's
// byte_size. REQUIRES: `out` does not overlap tensor.data.
Status ReadSliceInto(const TensorView& tensor, std::span<const SliceIndex> indices,
                     MutableByteView out);

// The selected elements as an owned tensor with the source's name and dtype.
// Errors: those of PlanSlice.
Result<Tensor> ReadSlice(const TensorView& tensor, std::span<const SliceIndex> indices);

}  // namespace carton::safetensors
