// carton_info: carton.toml's description of a model and its manifest hash,
// from a loaded model or read without loading (loader::GetModelInfo).
#include <string>
#include <variant>

#include "carton/loader/environment.h"
#include "dtype.h"
#include "errors.h"
#include "handles.h"

namespace carton::capi {
namespace {

carton_info* MakeInfo(const CartonConfig& config, std::optional<std::string> manifest_hash) {
  carton_info info{config, std::move(manifest_hash), {}};
  // Named as the loader names them (loaded.cc), so the report matches.
  for (std::size_t i = 0; i < config.self_tests.size(); ++i) {
    const auto& name = config.self_tests[i].name;
    info.self_test_names.push_back(name && !name->empty() ? *name
                                                          : "self_test[" + std::to_string(i) + "]");
  }
  return NewHandle<carton_info>(std::move(info));
}

const char* OrNull(const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; }

Result<const char*> Field(const char* function, const carton_info& info, carton_info_field field) {
  const CartonConfig& c = info.config;
  switch (static_cast<int>(field)) {
    case CARTON_INFO_MODEL_NAME:
      return OrNull(c.model_name);
    case CARTON_INFO_SHORT_DESCRIPTION:
      return OrNull(c.short_description);
    case CARTON_INFO_MODEL_DESCRIPTION:
      return OrNull(c.model_description);
    case CARTON_INFO_LICENSE:
      return OrNull(c.license);
    case CARTON_INFO_REPOSITORY:
      return OrNull(c.repository);
    case CARTON_INFO_HOMEPAGE:
      return OrNull(c.homepage);
    case CARTON_INFO_RUNNER_NAME:
      return c.runner.runner_name.c_str();
    case CARTON_INFO_REQUIRED_FRAMEWORK_VERSION:
      return c.runner.required_framework_version.c_str();
    case CARTON_INFO_MANIFEST_HASH:
      return OrNull(info.manifest_hash);
  }
  return InvalidArgument(std::string(function) + ": field " +
                         std::to_string(static_cast<int>(field)) + " is not a carton_info_field");
}

Result<const std::vector<TensorSpec>*> Specs(const char* function, const carton_info* info,
                                             carton_io io) {
  CARTON_RETURN_IF_ERROR(Require(info, function, "info"));
  switch (static_cast<int>(io)) {
    case CARTON_INPUTS:
      return &info->config.inputs;
    case CARTON_OUTPUTS:
      return &info->config.outputs;
  }
  return InvalidArgument(std::string(function) + ": io " + std::to_string(static_cast<int>(io)) +
                         " is not CARTON_INPUTS or CARTON_OUTPUTS");
}

Result<const TensorSpec*> SpecAt(const char* function, const carton_info* info, carton_io io,
                                 std::size_t index) {
  CARTON_ASSIGN_OR_RETURN(const std::vector<TensorSpec>* specs, Specs(function, info, io));
  if (index >= specs->size()) {
    return OutOfRange(function, io == CARTON_INPUTS ? "input" : "output", index, specs->size());
  }
  return &(*specs)[index];
}

}  // namespace
}  // namespace carton::capi

extern "C" {

carton_status carton_model_info(carton_model* model, carton_info** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(model, fn, "model"));
    // A LoadedCarton is immutable: no lock is needed to read it.
    const auto& hash = model->model.carton().manifest_hash();
    *out = capi::MakeInfo(model->model.config(),
                          hash ? std::optional<std::string>(manifest::ToHex(*hash)) : std::nullopt);
    return Status::Ok();
  });
}

carton_status carton_info_read(const char* location, carton_info** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(location, fn, "location"));
    CARTON_ASSIGN_OR_RETURN(Location where, Location::Parse(location));
    CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
    CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(where, env, {.operation = "info"}));
    CARTON_ASSIGN_OR_RETURN(CartonInfo info, source->Info());
    *out = capi::MakeInfo(info.config, manifest::ToHex(info.manifest_hash));
    return Status::Ok();
  });
}

void carton_info_free(carton_info* info) { carton::capi::FreeHandle(info); }

carton_status carton_info_string(const carton_info* info, carton_info_field field,
                                 const char** value) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(value, fn, "value"));
    *value = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(info, fn, "info"));
    CARTON_ASSIGN_OR_RETURN(*value, capi::Field(fn, *info, field));
    return Status::Ok();
  });
}

carton_status carton_info_tensor_count(const carton_info* info, carton_io io, size_t* count) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(count, fn, "count"));
    *count = 0;
    CARTON_ASSIGN_OR_RETURN(const auto* specs, capi::Specs(fn, info, io));
    *count = specs->size();
    return Status::Ok();
  });
}

carton_status carton_info_tensor_name(const carton_info* info, carton_io io, size_t index,
                                      const char** name) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(name, fn, "name"));
    *name = nullptr;
    CARTON_ASSIGN_OR_RETURN(const TensorSpec* spec, capi::SpecAt(fn, info, io, index));
    *name = spec->name.c_str();
    return Status::Ok();
  });
}

carton_status carton_info_tensor_dtype(const carton_info* info, carton_io io, size_t index,
                                       carton_dtype* dtype) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(dtype, fn, "dtype"));
    *dtype = CARTON_DTYPE_FLOAT32;
    CARTON_ASSIGN_OR_RETURN(const TensorSpec* spec, capi::SpecAt(fn, info, io, index));
    *dtype = capi::ToCDtype(spec->dtype);
    return Status::Ok();
  });
}

carton_status carton_info_tensor_description(const carton_info* info, carton_io io, size_t index,
                                             const char** description) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(description, fn, "description"));
    *description = nullptr;
    CARTON_ASSIGN_OR_RETURN(const TensorSpec* spec, capi::SpecAt(fn, info, io, index));
    *description = capi::OrNull(spec->description);
    return Status::Ok();
  });
}

carton_status carton_info_tensor_shape(const carton_info* info, carton_io io, size_t index,
                                       carton_shape_kind* kind, size_t* rank, const char** symbol) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(kind, fn, "kind"));
    *kind = CARTON_SHAPE_ANY;
    if (rank != nullptr) *rank = 0;
    if (symbol != nullptr) *symbol = nullptr;
    CARTON_ASSIGN_OR_RETURN(const TensorSpec* spec, capi::SpecAt(fn, info, io, index));
    if (const auto* s = std::get_if<SymbolDim>(&spec->shape)) {
      *kind = CARTON_SHAPE_SYMBOL;
      if (symbol != nullptr) *symbol = s->name.c_str();
    } else if (const auto* dims = std::get_if<std::vector<Dimension>>(&spec->shape)) {
      *kind = CARTON_SHAPE_DIMS;
      if (rank != nullptr) *rank = dims->size();
    }
    return Status::Ok();
  });
}

carton_status carton_info_tensor_dim(const carton_info* info, carton_io io, size_t index,
                                     size_t dim, carton_dim_kind* kind, uint64_t* size,
                                     const char** symbol) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(kind, fn, "kind"));
    *kind = CARTON_DIM_FIXED;
    if (size != nullptr) *size = 0;
    if (symbol != nullptr) *symbol = nullptr;
    CARTON_ASSIGN_OR_RETURN(const TensorSpec* spec, capi::SpecAt(fn, info, io, index));
    const auto* dims = std::get_if<std::vector<Dimension>>(&spec->shape);
    if (dims == nullptr) {
      return InvalidArgument(std::string(fn) + ": \"" + spec->name +
                             "\" has no list of dimensions (its shape is \"*\" or a symbol)");
    }
    if (dim >= dims->size()) return capi::OutOfRange(fn, "dimension", dim, dims->size());
    const Dimension& d = (*dims)[dim];
    if (const auto* fixed = std::get_if<std::uint64_t>(&d)) {
      *kind = CARTON_DIM_FIXED;
      if (size != nullptr) *size = *fixed;
    } else if (const auto* s = std::get_if<SymbolDim>(&d)) {
      *kind = CARTON_DIM_SYMBOL;
      if (symbol != nullptr) *symbol = s->name.c_str();
    } else {
      *kind = CARTON_DIM_ANY;
    }
    return Status::Ok();
  });
}

carton_status carton_info_self_test_count(const carton_info* info, size_t* count) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(count, fn, "count"));
    *count = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(info, fn, "info"));
    *count = info->self_test_names.size();
    return Status::Ok();
  });
}

carton_status carton_info_self_test_name(const carton_info* info, size_t index, const char** name) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(name, fn, "name"));
    *name = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(info, fn, "info"));
    if (index >= info->self_test_names.size()) {
      return capi::OutOfRange(fn, "self-test", index, info->self_test_names.size());
    }
    *name = info->self_test_names[index].c_str();
    return Status::Ok();
  });
}

}  // extern "C"
