// Building carton_tensors from C arguments, shared by tensors.cc and the
// files that fill a map (safetensors.cc, model.cc).
#pragma once

#include <vector>

#include "carton/common/status.h"
#include "carton/format/tensor.h"
#include "handles.h"

namespace carton::capi {

// OK when `name` may be added to `tensors`: not NULL, not empty, UTF-8,
// not already there. Errors: kInvalidArgument naming `function`.
Status CheckNewName(const char* function, const carton_tensors& tensors, const char* name);

// Appends `tensors` to `into`, all or none: each name must be new.
Status AddTensors(const char* function, carton_tensors* into, std::vector<Tensor> tensors);

// Tensor `index` of `tensors`. Errors: kInvalidArgument (NULL, out of range).
Result<const Tensor*> TensorAt(const char* function, const carton_tensors* tensors,
                               std::size_t index);

// A numeric tensor over the caller's buffer (borrowed when C order, else
// gathered). Errors: kInvalidArgument (as carton_tensors_add).
Result<Tensor> NumericTensor(const char* function, const char* name, carton_dtype dtype,
                             const void* data, std::size_t rank, const std::uint64_t* shape,
                             const std::int64_t* strides);

// A string tensor of copies of `strings`, each checked to be UTF-8.
Result<Tensor> StringTensor(const char* function, const char* name, const char* const* strings,
                            std::size_t rank, const std::uint64_t* shape);

}  // namespace carton::capi
