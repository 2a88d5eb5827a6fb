// The TorchScript runner: runs `model/model.pt` (or runner opt
// `model_path`) with libtorch. The same class backs the
// `carton-runner-torchscript` executable and can be linked into a service
// (target carton::torchscript) to serve a model in-process.
//
// Runner opts: `model_path` (a path relative to the model directory;
// without it, model.pt, where the original implementation's packer puts a
// single .pt file), `num_threads` and `num_interop_threads` (positive
// integers; torch's intra-op and inter-op thread pools, set once per
// process). Other opts are reported on stderr and ignored. A model file
// that does not exist is kNotFound, naming it and the .pt files model/
// holds.
//
// Inputs are matched to `forward`'s arguments. A single dict argument gets
// every input by name (or internal_name): `Dict[str, Tensor]` numeric
// inputs only; `Dict[str, Any]` (or any value type that can hold them, such
// as a Union) numeric inputs as tensors, rank-0 string tensors as `str` and
// rank-1 ones as `List[str]`, as the original implementation calls
// models. Otherwise the arguments take the inputs in the order of the
// carton's [[input]]s (or, when none are declared, the inputs named like the
// arguments). Inputs are checked against the declared dtype and shape
// before the model runs.
// Outputs: a tensor (named by the single declared output), a tuple or list
// (named by the declared outputs, in order) or a dict (named by its keys).
// Each value is a tensor, a `str`, a `List[str]` (or a list holding only
// strings), or a Python scalar: `int` -> int64, `float` -> float64,
// `bool` -> uint8 0/1, each of rank 0 (bool tensors become uint8 too).
// Anything else is kUnsupported naming the output and its TorchScript type.
// Device (LoadContext::device): the module is loaded onto it, inputs are
// moved there and outputs brought back to the CPU; a GPU is cuda:0 (the
// process sees that one alone). Built against a libtorch without CUDA
// (Debian's), a GPU the caller named is refused (saying how to build
// against a CUDA-enabled libtorch) and the default runs on the CPU, with a
// note on stderr.
// No torch exception leaves Load or Infer: each becomes an error.
#pragma once

#include <memory>
#include <string>

#include "carton/runner/runner.h"

namespace carton::torchscript {

// The framework version the runner reports: the libtorch it was built with.
std::string FrameworkVersion();

std::unique_ptr<runner::Runner> MakeTorchScriptRunner();

}  // namespace carton::torchscript
