// The runs of a sliced tensor (load_plan.h): the longest contiguous stretch
// of source bytes each selected element block takes, in output order.
#include <string>
#include <vector>

#include "carton/common/quote.h"
#include "load_plan.h"

namespace carton::safetensors::internal {
namespace {

bool TakesWhole(const DimSelection& d, std::uint64_t dim) {
  return d.start == 0 && d.count == dim && (d.count <= 1 || d.step == 1);
}

Status CheckSteps(const TensorView& tensor, const SlicePlan& plan) {
  for (std::size_t i = 0; i < plan.dims.size(); ++i) {
    if (plan.dims[i].count > 1 && plan.dims[i].step < 0) {
      return Unsupported("tensor " + QuoteForMessage(tensor.name) + ": dimension " +
                         std::to_string(i) +
                         " is sliced with a negative step, which a load cannot read "
                         "(ReadSlice can)");
    }
  }
  if (DtypeBits(tensor.dtype) % 8 != 0) {
    return Unsupported("tensor " + QuoteForMessage(tensor.name) + ": a " +
                       std::string(DtypeName(tensor.dtype)) + " tensor can only be read whole");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Run>> SliceRuns(const TensorView& tensor, const SlicePlan& plan,
                                   std::uint64_t src) {
  if (plan.byte_size == 0) return std::vector<Run>();
  if (plan.whole) return std::vector<Run>{{src, 0, plan.byte_size}};
  CARTON_RETURN_IF_ERROR(CheckSteps(tensor, plan));
  const std::size_t rank = tensor.shape.size();
  // Byte strides of the source; they fit, as the tensor's byte size does.
  std::vector<std::uint64_t> stride(rank);
  std::uint64_t s = DtypeBits(tensor.dtype) / 8;
  for (std::size_t i = rank; i-- > 0;) {
    stride[i] = s;
    s *= tensor.shape[i];
  }
  // Trailing dimensions taken whole make one block; the dimension before
  // them, stepped by 1, extends it.
  std::size_t outer = rank;  // dimensions [0, outer) are iterated
  std::uint64_t run = DtypeBits(tensor.dtype) / 8;
  while (outer > 0 && TakesWhole(plan.dims[outer - 1], tensor.shape[outer - 1])) {
    run *= tensor.shape[--outer];
  }
  if (outer > 0 && (plan.dims[outer - 1].count <= 1 || plan.dims[outer - 1].step == 1)) {
    --outer;
    run *= plan.dims[outer].count;
    src += plan.dims[outer].start * stride[outer];
  }
  const std::uint64_t count = plan.byte_size / run;
  if (count > kMaxSliceRuns) {
    return Unsupported("tensor " + QuoteForMessage(tensor.name) + ": the slice needs " +
                       std::to_string(count) + " separate reads (at most " +
                       std::to_string(kMaxSliceRuns) + ")");
  }
  std::vector<Run> runs;
  runs.reserve(static_cast<std::size_t>(count));
  std::vector<std::uint64_t> at(outer, 0);  // the odometer over dimensions [0, outer)
  for (std::uint64_t k = 0; k < count; ++k) {
    std::uint64_t offset = src;
    for (std::size_t i = 0; i < outer; ++i) {
      const DimSelection& d = plan.dims[i];
      offset += (d.start + at[i] * static_cast<std::uint64_t>(d.step)) * stride[i];
    }
    runs.push_back({offset, k * run, run});
    for (std::size_t i = outer; i-- > 0;) {
      if (++at[i] < plan.dims[i].count) break;
      at[i] = 0;
    }
  }
  return runs;
}

}  // namespace carton::safetensors::internal
