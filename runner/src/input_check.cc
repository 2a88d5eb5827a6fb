#include "carton/runner/input_check.h"

#include <map>
#include <set>
#include <string>
#include <variant>

#include "carton/format/tensor.h"

namespace carton::runner {
namespace {

Status Mismatch(const std::string& name, const std::string& what) {
  return Status(StatusCode::kInvalidArgument,
                "input \"" + name + "\": " + what + " (declared in carton.toml)");
}

struct Bindings {
  std::map<std::string, std::uint64_t> dims;                 // symbol -> dimension
  std::map<std::string, std::vector<std::uint64_t>> shapes;  // symbol -> whole shape
};

Status CheckShape(const TensorSpec& spec, const Tensor& t, Bindings& b) {
  if (std::holds_alternative<AnyDim>(spec.shape)) return Status::Ok();
  if (const auto* sym = std::get_if<SymbolDim>(&spec.shape)) {
    auto [it, fresh] = b.shapes.emplace(sym->name, t.shape);
    if (!fresh && it->second != t.shape) {
      return Mismatch(t.name, "shape " + ShapeText(t.shape) + " but shape symbol \"" + sym->name +
                                  "\" is " + ShapeText(it->second) + " in another input");
    }
    return Status::Ok();
  }
  const auto& dims = std::get<std::vector<Dimension>>(spec.shape);
  if (dims.size() != t.shape.size()) {
    return Mismatch(t.name, "shape " + ShapeText(t.shape) + " has rank " +
                                std::to_string(t.shape.size()) + ", not " +
                                std::to_string(dims.size()));
  }
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::uint64_t actual = t.shape[i];
    if (const auto* fixed = std::get_if<std::uint64_t>(&dims[i])) {
      if (*fixed != actual) {
        return Mismatch(t.name, "shape " + ShapeText(t.shape) + ": dimension " + std::to_string(i) +
                                    " is " + std::to_string(actual) + ", not " +
                                    std::to_string(*fixed));
      }
    } else if (const auto* sym = std::get_if<SymbolDim>(&dims[i])) {
      auto [it, fresh] = b.dims.emplace(sym->name, actual);
      if (!fresh && it->second != actual) {
        return Mismatch(t.name, "shape " + ShapeText(t.shape) + ": dimension " + std::to_string(i) +
                                    " is " + std::to_string(actual) + " but symbol \"" + sym->name +
                                    "\" is " + std::to_string(it->second) + " elsewhere");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckInputs(const std::vector<TensorSpec>& declared, const std::vector<Tensor>& inputs) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& t : inputs) {
    if (!by_name.emplace(t.name, &t).second) {
      return Status(StatusCode::kInvalidArgument, "input \"" + t.name + "\" is given twice");
    }
  }
  if (declared.empty()) return Status::Ok();
  std::set<std::string> names;
  Bindings bindings;
  for (const auto& spec : declared) {
    names.insert(spec.name);
    auto it = by_name.find(spec.name);
    if (it == by_name.end()) {
      return Mismatch(spec.name, "missing");
    }
    const Tensor& t = *it->second;
    if (t.dtype != spec.dtype) {
      return Mismatch(t.name, "dtype " + std::string(DataTypeName(t.dtype)) + ", not " +
                                  std::string(DataTypeName(spec.dtype)));
    }
    CARTON_RETURN_IF_ERROR(CheckShape(spec, t, bindings));
  }
  for (const auto& t : inputs) {
    if (!names.count(t.name)) {
      return Status(StatusCode::kInvalidArgument,
                    "input \"" + t.name + "\" is not one of the carton's declared inputs");
    }
  }
  return Status::Ok();
}

}  // namespace carton::runner
