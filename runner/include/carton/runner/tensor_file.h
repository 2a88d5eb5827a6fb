// Tensors in safetensors files, as `infer` reads and writes them. String
// tensors (which safetensors lacks) use the convention of PROTOCOL.md
// "Tensors", so any tensor round-trips. Thread-safe free functions.
#pragma once

#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/format/tensor.h"

namespace carton::runner {

// Reads one input given as NAME=FILE.safetensors[:TENSOR]: the file's tensor
// TENSOR, else its tensor NAME, else its only tensor; named NAME. The
// returned view keeps the file mapped. Errors: kInvalidArgument (syntax),
// kNotFound, kCorrupt, kUnsupported.
Result<Tensor> ReadTensorArg(const std::string& spec);

// Reads every tensor of a safetensors file (in the order recorded by
// WriteTensorsFile, else by name).
Result<std::vector<Tensor>> ReadTensorsFile(const std::string& path);

// Writes `tensors` atomically. Errors: kInvalidArgument (inconsistent
// tensor, duplicate name), kIoError.
Status WriteTensorsFile(const std::string& path, const std::vector<Tensor>& tensors);

}  // namespace carton::runner
