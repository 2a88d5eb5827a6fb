#include "safetensors_slice.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "safetensors_binding.h"

namespace carton::python {
namespace {

namespace st = carton::safetensors;

std::optional<std::int64_t> SlicePart(py::handle v) {
  if (v.is_none()) return std::nullopt;
  return py::cast<std::int64_t>(py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr())));
}

bool IsIndex(py::handle v) { return !PyBool_Check(v.ptr()) && PyIndex_Check(v.ptr()); }

std::vector<std::int64_t> Picks(const py::list& list) {
  std::vector<std::int64_t> picks;
  picks.reserve(list.size());
  for (py::handle v : list) {
    if (!IsIndex(v)) {
      throw py::type_error("list indices must be ints, not " + TypeName(v));
    }
    picks.push_back(*SlicePart(v));
  }
  return picks;
}

// The selection with the list replaced by `index`.
std::vector<st::SliceIndex> With(const Selection& s, st::SliceIndex index) {
  std::vector<st::SliceIndex> out = s.indices;
  out[*s.list] = index;
  return out;
}

// The output dimension the list's elements run along. As in numpy (and
// torch), integers count as indices of the same kind as the list when there
// is one: if a range separates any of them, the list's dimension comes
// first; otherwise it stands where they stand, after the ranges before it.
std::size_t ListAxis(const Selection& s) {
  const auto is_range = [&](std::size_t i) {
    return i != *s.list && s.indices[i].kind == st::SliceIndex::Kind::kRange;
  };
  std::size_t first = *s.list;
  std::size_t last = *s.list;
  for (std::size_t i = 0; i < s.indices.size(); ++i) {
    if (is_range(i)) continue;
    first = std::min(first, i);
    last = std::max(last, i);
  }
  std::size_t axis = 0;
  for (std::size_t i = 0; i < first; ++i) axis += is_range(i) ? 1 : 0;
  for (std::size_t i = first; i < last; ++i) {
    if (is_range(i)) return 0;
  }
  return axis;
}

std::uint64_t Product(const std::vector<std::uint64_t>& shape, std::size_t from, std::size_t to) {
  std::uint64_t n = 1;
  for (std::size_t i = from; i < to; ++i) n *= shape[i];
  return n;
}

}  // namespace

Selection SelectionFromPython(const py::list& indices) {
  Selection s;
  for (py::handle i : indices) {
    if (PySlice_Check(i.ptr())) {
      s.indices.push_back(st::SliceIndex::Range(
          SlicePart(i.attr("start")), SlicePart(i.attr("stop")), SlicePart(i.attr("step"))));
    } else if (IsIndex(i)) {
      s.indices.push_back(st::SliceIndex::At(*SlicePart(i)));
    } else if (PyList_Check(i.ptr())) {
      if (s.list) {
        RaiseSafetensorsMessage(
            "indexing with more than one list or array is not supported (index one dimension "
            "with a list, then index the result)");
      }
      s.list = s.indices.size();
      s.picks = Picks(py::reinterpret_borrow<py::list>(i));
      s.indices.push_back(st::SliceIndex::All());
    } else {
      throw py::type_error("slice indices must be ints, slices, lists or ..., not " + TypeName(i));
    }
  }
  return s;
}

Result<std::vector<std::uint64_t>> SelectionShape(const st::TensorView& tensor,
                                                  const Selection& selection) {
  if (!selection.list) {
    CARTON_ASSIGN_OR_RETURN(st::SlicePlan plan, st::PlanSlice(tensor, selection.indices));
    return plan.shape;
  }
  // Each pick must select an element; the output has the shape of an empty
  // range there, with one entry per pick.
  for (std::int64_t pick : selection.picks) {
    CARTON_RETURN_IF_ERROR(
        st::PlanSlice(tensor, With(selection, st::SliceIndex::At(pick))).status());
  }
  CARTON_ASSIGN_OR_RETURN(st::SlicePlan empty,
                          st::PlanSlice(tensor, With(selection, st::SliceIndex::Range(0, 0))));
  // The empty range stands among the ranges; the picks go to ListAxis.
  std::size_t at = 0;
  for (std::size_t i = 0; i < *selection.list; ++i) {
    at += selection.indices[i].kind == st::SliceIndex::Kind::kRange ? 1 : 0;
  }
  empty.shape.erase(empty.shape.begin() + static_cast<std::ptrdiff_t>(at));
  empty.shape.insert(empty.shape.begin() + static_cast<std::ptrdiff_t>(ListAxis(selection)),
                     selection.picks.size());
  return empty.shape;
}

Status ReadSelection(const st::TensorView& tensor, const Selection& selection,
                     MutableByteView out) {
  if (!selection.list) return st::ReadSliceInto(tensor, selection.indices, out);
  CARTON_ASSIGN_OR_RETURN(std::vector<std::uint64_t> shape, SelectionShape(tensor, selection));
  const std::size_t axis = ListAxis(selection);
  const std::uint64_t outer = Product(shape, 0, axis);
  const std::uint64_t n = selection.picks.size();
  if (outer == 0 || n == 0) return Status::Ok();
  // Each pick is one slice with the list's dimension dropped: `outer` runs
  // of `inner` bytes, each going to its place among the picks.
  std::vector<std::byte> part;
  for (std::uint64_t j = 0; j < n; ++j) {
    const auto indices = With(selection, st::SliceIndex::At(selection.picks[j]));
    CARTON_ASSIGN_OR_RETURN(st::SlicePlan plan, st::PlanSlice(tensor, indices));
    const std::uint64_t inner = plan.byte_size / outer;
    if (j == 0 && out.size() != outer * n * inner) {
      return InvalidArgument("the output is " + std::to_string(out.size()) + " bytes, not " +
                             std::to_string(outer * n * inner));
    }
    if (inner == 0) continue;  // nothing to read, and no buffer to copy from
    part.resize(plan.byte_size);
    CARTON_RETURN_IF_ERROR(st::ReadSliceInto(tensor, indices, part));
    for (std::uint64_t o = 0; o < outer; ++o) {
      std::memcpy(out.data() + (o * n + j) * inner, part.data() + o * inner, inner);
    }
  }
  return Status::Ok();
}

}  // namespace carton::python
