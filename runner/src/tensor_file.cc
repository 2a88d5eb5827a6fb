#include "carton/runner/tensor_file.h"

#include <filesystem>

#include "wire.h"

namespace carton::runner {

Result<Tensor> ReadTensorArg(const std::string& spec) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--input \"" + spec + "\": expected NAME=FILE.safetensors[:TENSOR]");
  }
  std::string name = spec.substr(0, eq), file = spec.substr(eq + 1), tensor;
  std::error_code ec;
  auto colon = file.rfind(':');
  if (!std::filesystem::exists(file, ec) && colon != std::string::npos) {
    tensor = file.substr(colon + 1);
    file.resize(colon);
  }
  auto opened = safetensors::File::Open(file);
  if (!opened.ok()) return opened.status();
  auto f = std::make_shared<const safetensors::File>(std::move(opened).value());
  if (tensor.empty()) {
    tensor =
        (f->Find(name) == nullptr && f->size() == 1) ? std::string(f->tensors()[0].name) : name;
  }
  if (f->Find(tensor) == nullptr) {
    std::string names;
    for (const auto& t : f->tensors()) names += (names.empty() ? "" : ", ") + std::string(t.name);
    return NotFound(file + ": no tensor named \"" + tensor +
                    "\" (it has: " + (names.empty() ? "no tensors" : names) + ")");
  }
  auto t = internal::DecodeTensor(*f, tensor, name, f);
  if (!t.ok()) return t.status().WithContext(file);
  return t;
}

Result<std::vector<Tensor>> ReadTensorsFile(const std::string& path) {
  auto opened = safetensors::File::Open(path);
  if (!opened.ok()) return opened.status();
  auto f = std::make_shared<const safetensors::File>(std::move(opened).value());
  auto t = internal::DecodeTensors(*f, f);
  if (!t.ok()) return t.status().WithContext(path);
  return t;
}

Status WriteTensorsFile(const std::string& path, const std::vector<Tensor>& tensors) {
  return internal::WriteTensorsFile(path, tensors);
}

}  // namespace carton::runner
