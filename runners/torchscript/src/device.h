// Private: the torch device the TorchScript runner runs a model on, and
// moving values between it and the CPU.
//
// The runner's process sees one GPU at most (CUDA_VISIBLE_DEVICES names the
// caller's choice alone), so a GPU is always cuda:0 here. A libtorch built
// without CUDA (Debian's) refuses a GPU the caller named, and runs on the
// CPU under the default with a note on stderr.
// Thread-safety: free functions; torch's own rules hold for the values.
#pragma once

#include <torch/script.h>

#include "carton/common/status.h"
#include "carton/loader/device.h"

namespace carton::torchscript {

// Whether this libtorch has CUDA support compiled in (its CUDA library
// registered), whether or not a GPU is visible.
bool TorchHasCuda();

// The torch device for `device`. Errors: kInvalidArgument, when the caller
// named a GPU (device.requested) and libtorch has no CUDA support (the
// message says how to build against one) or sees no GPU.
Result<torch::Device> ChooseTorchDevice(const loader::Device& device);

// `value` with every tensor in it (in lists, tuples and dicts too) on
// `device`; tensors already there are not copied. Torch may throw.
c10::IValue ValueOnDevice(const c10::IValue& value, const torch::Device& device);

}  // namespace carton::torchscript
