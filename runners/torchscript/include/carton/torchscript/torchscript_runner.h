// The TorchScript runner: runs `model/model.pt` (or runner opt
// `model_path`) with libtorch. The same class backs the
// `carton-runner-torchscript` executable and can be linked into a service
// (target carton::torchscript) to serve a model in-process.
//
// Runner opts: `model_path` (a path relative to the model directory),
// `num_threads` and `num_interop_threads` (positive integers; torch's
// intra-op and inter-op thread pools, set once per process). Other opts
// are reported on stderr and ignored.
//
// Inputs are matched to `forward`'s arguments: a single Dict[str, Tensor]
// argument gets every input by name (or internal_name), otherwise the
// arguments take the inputs in the order of the carton's [[input]]s (or,
// when none are declared, the inputs named like the arguments). Inputs are
// checked against the declared dtype and shape before the model runs.
// Outputs: a tensor (named by the single declared output), a tuple or list
// (named by the declared outputs, in order) or a dict (named by its keys).
#pragma once

#include <memory>
#include <string>

#include "carton/runner/runner.h"

namespace carton::torchscript {

// The framework version the runner reports: the libtorch it was built with.
std::string FrameworkVersion();

std::unique_ptr<runner::Runner> MakeTorchScriptRunner();

}  // namespace carton::torchscript
