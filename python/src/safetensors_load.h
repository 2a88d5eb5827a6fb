// Private: safetensors::Load (load.h) for carton.safetensors: the tensors of
// one file loaded in one pass, on reader threads with pread(2), into host
// memory or a CUDA device, and handed to torch or numpy as DLPack capsules.
//
// Ownership: a LoadedFile (the Python object LoadTensors returns) owns the
// LoadedTensors; each capsule it makes holds the one allocation too, so the
// arrays and tensors made from them outlive it (load.h). Called with the GIL
// held; Load itself runs without it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/random_access.h"
#include "carton/safetensors/load.h"

namespace carton::python {

namespace py = pybind11;

// Loads `tensors` (whole or sliced; every tensor of the file when nullopt)
// of the file at `path` into host memory (`cuda_index` nullopt) or CUDA
// device `cuda_index`. `source`, when set, is the file already open for
// reading: the load reads it rather than opening `path` again. Raises
// SafetensorError with the load's error (a missing CUDA driver included).
py::object LoadTensors(const std::string& path, std::shared_ptr<const RandomAccessSource> source,
                       std::optional<std::vector<safetensors::TensorRequest>> tensors,
                       std::optional<int> cuda_index);

// Loads the selection `indices` (ints and forward ranges) of tensor `name`
// into host memory: only its bytes are read. The result owns them.
Result<safetensors::LoadedTensors> LoadHostSlice(const std::string& path,
                                                 std::shared_ptr<const RandomAccessSource> source,
                                                 const std::string& name,
                                                 std::vector<safetensors::SliceIndex> indices);

// The LoadedFile class.
void BindSafetensorsLoad(py::module_& m);

}  // namespace carton::python
