#include "device.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include <iostream>
#include <string>
#include <vector>

namespace carton::torchscript {
namespace {

constexpr char kBuildHint[] =
    "build carton-runner-torchscript against a CUDA-enabled libtorch (cmake "
    "-DTorch_DIR=<the directory of a CUDA libtorch's TorchConfig.cmake>)";

}  // namespace

bool TorchHasCuda() { return at::CUDAHooksRegistry()->Has("CUDAHooks"); }

Result<torch::Device> ChooseTorchDevice(const loader::Device& device) {
  if (!device.gpu) return torch::Device(torch::kCPU);
  const std::string what = "device " + device.uuid;
  if (!TorchHasCuda()) {
    if (device.requested) {
      return InvalidArgument(what +
                             ": this carton-runner-torchscript is built against a libtorch " +
                             "without CUDA support, which runs models on the CPU only; run on " +
                             "the CPU (--device cpu), or " + kBuildHint);
    }
    std::cerr << "carton-runner-torchscript: note: libtorch has no CUDA support here, so the "
                 "model runs on the CPU, not on the default device "
              << device.uuid << " (to run on it, " << kBuildHint << ")\n";
    return torch::Device(torch::kCPU);
  }
  if (!torch::cuda::is_available()) {
    if (device.requested) {
      return InvalidArgument(what + ": libtorch sees no CUDA device (CUDA_VISIBLE_DEVICES=" +
                             device.uuid + "; `carton devices` lists the GPUs)");
    }
    std::cerr << "carton-runner-torchscript: note: libtorch sees no CUDA device, so the model "
                 "runs on the CPU, not on the default device "
              << device.uuid << "\n";
    return torch::Device(torch::kCPU);
  }
  // CUDA_VISIBLE_DEVICES names the one device: it is cuda:0.
  return torch::Device(torch::kCUDA, 0);
}

c10::IValue ValueOnDevice(const c10::IValue& value, const torch::Device& device) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    return t.device() == device ? value : c10::IValue(t.to(device));
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> items;
    for (const auto& item : value.toTupleRef().elements()) {
      items.push_back(ValueOnDevice(item, device));
    }
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (value.isList()) {
    c10::impl::GenericList list(value.toList().elementType());
    for (const c10::IValue& item : value.toList()) list.push_back(ValueOnDevice(item, device));
    return list;
  }
  if (value.isGenericDict()) {
    const auto dict = value.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), dict.valueType());
    out.reserve(dict.size());
    for (const auto& item : dict) out.insert(item.key(), ValueOnDevice(item.value(), device));
    return out;
  }
  return value;
}

}  // namespace carton::torchscript
