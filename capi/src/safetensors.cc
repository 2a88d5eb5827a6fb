// Safetensors files as `carton infer` reads its --input files and writes
// its --output (runner/tensor_file.h), so the bytes are the same.
#include "carton/runner/tensor_file.h"
#include "errors.h"
#include "handles.h"
#include "tensors.h"

extern "C" {

carton_status carton_safetensors_read(const char* path, carton_tensors* into) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(path, fn, "path"));
    CARTON_RETURN_IF_ERROR(capi::Require(into, fn, "into"));
    CARTON_ASSIGN_OR_RETURN(std::vector<Tensor> tensors, runner::ReadTensorsFile(path));
    return capi::AddTensors(fn, into, std::move(tensors)).WithContext(path);
  });
}

carton_status carton_safetensors_read_arg(const char* spec, carton_tensors* into) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(spec, fn, "spec"));
    CARTON_RETURN_IF_ERROR(capi::Require(into, fn, "into"));
    CARTON_ASSIGN_OR_RETURN(Tensor tensor, runner::ReadTensorArg(spec));
    std::vector<Tensor> tensors;
    tensors.push_back(std::move(tensor));
    return capi::AddTensors(fn, into, std::move(tensors));
  });
}

carton_status carton_safetensors_write(const char* path, const carton_tensors* tensors) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(path, fn, "path"));
    CARTON_RETURN_IF_ERROR(capi::Require(tensors, fn, "tensors"));
    return runner::WriteTensorsFile(path, tensors->tensors);
  });
}

}  // extern "C"
