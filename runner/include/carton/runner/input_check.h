// Checking tensors against the [[input]]s of carton.toml before a model
// runs: dtype, rank, fixed dimensions, and symbols that must resolve to one
// value across all the inputs of a call. Used by runners on each call and by
// callers (`carton infer`) before a runner is started. Stateless and
// thread-safe.
#pragma once

#include <vector>

#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor.h"

namespace carton::runner {

// OK when every declared input is present once with its declared dtype and
// a shape matching its declared shape, and no undeclared input is given.
// Errors: kInvalidArgument naming the input and the mismatch.
Status CheckInputs(const std::vector<TensorSpec>& declared, const std::vector<Tensor>& inputs);

}  // namespace carton::runner
