// Private: get_slice's selections. A Selection is numpy's basic indexing
// (an int or a start:stop:step range per leading dimension, as
// safetensors/slice.h reads them) plus at most one list of ints, which
// picks elements of its dimension in the list's order, as numpy and torch
// do for one integer array: `w[[3, 0, 3], 1:]`.
//
// Thread-safety: pure functions on the views they are given.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/safetensors/slice.h"
#include "carton/safetensors/tensor.h"

namespace carton::python {

namespace py = pybind11;

struct Selection {
  // One per leading dimension; at `list` a placeholder.
  std::vector<safetensors::SliceIndex> indices;
  std::optional<std::size_t> list;  // the position of the list, if any
  std::vector<std::int64_t> picks;  // the list's elements (negative count from the end)
};

// A selection from the Python layer's list: ints, slices and at most one
// list of ints (`...` already expanded). Raises TypeError for any other
// value, SafetensorError for a second list.
Selection SelectionFromPython(const py::list& indices);

// The output shape of `selection` on `tensor` (a view whose bytes are in
// memory). Errors: those of safetensors::PlanSlice, including a pick out of
// range.
Result<std::vector<std::uint64_t>> SelectionShape(const safetensors::TensorView& tensor,
                                                  const Selection& selection);

// Copies the selected elements, in C order, into `out`, which must be the
// output's size. REQUIRES: `out` does not overlap tensor.data.
Status ReadSelection(const safetensors::TensorView& tensor, const Selection& selection,
                     MutableByteView out);

}  // namespace carton::python
