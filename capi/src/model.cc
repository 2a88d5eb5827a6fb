// Loading a model and running it: a thin shell over carton::runner::Model,
// which every shell (the CLI, Python) uses as well.
#include "model.h"

#include <mutex>
#include <string>

#include "carton/format/semver.h"
#include "carton/loader/environment.h"
#include "errors.h"
#include "handles.h"

namespace carton::capi {
namespace {

// Loads the carton and starts its runner, as `options` say.
Result<carton_model*> Load(const std::string& text, const carton_load_options& options) {
  CARTON_ASSIGN_OR_RETURN(Location location, Location::Parse(text));
  // A GPU that is not there is refused before the carton loads.
  runner::ModelOptions model = options.model;
  CARTON_ASSIGN_OR_RETURN(model.device, loader::ResolveDevice(options.device));
  CARTON_ASSIGN_OR_RETURN(runner::Model opened,
                          runner::Model::Open(location, options.environment, model));
  return NewHandle<carton_model>(text, std::move(opened));
}

// Optional text arguments of the options: NULL resets, "" is refused.
Status SetText(const char* function, const char* what, const char* value,
               std::optional<std::string>* field) {
  if (value == nullptr) {
    field->reset();
    return Status::Ok();
  }
  if (*value == '\0') return InvalidArgument(std::string(function) + ": " + what + " is empty");
  *field = value;
  return Status::Ok();
}

}  // namespace

Status ModelClosed(const char* function, const carton_model& model) {
  return InvalidArgument(std::string(function) + ": " + model.location + ": the model is closed");
}

}  // namespace carton::capi

extern "C" {

carton_status carton_load_options_new(carton_load_options** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = nullptr;
    CARTON_ASSIGN_OR_RETURN(Environment environment, loader::DefaultEnvironment());
    *out = capi::NewHandle<carton_load_options>();
    (*out)->environment = std::move(environment);
    return Status::Ok();
  });
}

void carton_load_options_free(carton_load_options* options) { carton::capi::FreeHandle(options); }

carton_status carton_load_options_set_device(carton_load_options* options, const char* device) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    CARTON_ASSIGN_OR_RETURN(options->device, capi::ParseDevice(device));
    return Status::Ok();
  });
}

carton_status carton_load_options_set_runner_name(carton_load_options* options,
                                                  const char* runner_name) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    return capi::SetText(fn, "runner_name", runner_name, &options->model.runner_name);
  });
}

carton_status carton_load_options_set_framework_version(carton_load_options* options,
                                                        const char* required_framework_version) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    if (required_framework_version != nullptr) {
      auto req = VersionReq::Parse(required_framework_version);
      if (!req.ok()) {
        return InvalidArgument(std::string(fn) + ": \"" + required_framework_version +
                               "\": " + req.status().message());
      }
    }
    return capi::SetText(fn, "required_framework_version", required_framework_version,
                         &options->model.framework_version);
  });
}

carton_status carton_load_options_add_runner_opt(carton_load_options* options,
                                                 const char* key_value) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    CARTON_RETURN_IF_ERROR(capi::Require(key_value, fn, "key_value"));
    const std::string text = key_value;
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(std::string(fn) + ": a runner option is KEY=VALUE, not \"" + text +
                             "\"");
    }
    options->model.runner_opts[text.substr(0, eq)] = text.substr(eq + 1);
    return Status::Ok();
  });
}

carton_status carton_load_options_set_cache_dir(carton_load_options* options,
                                                const char* cache_dir) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    std::optional<std::string> dir;
    CARTON_RETURN_IF_ERROR(capi::SetText(fn, "cache_dir", cache_dir, &dir));
    options->environment.cache_dir = dir.value_or("");
    return Status::Ok();
  });
}

carton_status carton_load_options_set_lenient(carton_load_options* options, int lenient) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    options->model.lenient = lenient != 0;
    return Status::Ok();
  });
}

carton_status carton_load(const char* location, const carton_load_options* options,
                          carton_model** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(location, fn, "location"));
    if (options != nullptr) {
      CARTON_ASSIGN_OR_RETURN(*out, capi::Load(location, *options));
      return Status::Ok();
    }
    carton_load_options defaults;
    CARTON_ASSIGN_OR_RETURN(defaults.environment, loader::DefaultEnvironment());
    CARTON_ASSIGN_OR_RETURN(*out, capi::Load(location, defaults));
    return Status::Ok();
  });
}

void carton_model_free(carton_model* model) { carton::capi::FreeHandle(model); }

carton_status carton_model_close(carton_model* model) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(model, fn, "model"));
    std::lock_guard<std::mutex> lock(model->mu);
    if (model->closed) return Status::Ok();
    model->closed = true;
    return model->model.Close();
  });
}

carton_status carton_infer(carton_model* model, const carton_tensors* inputs,
                           carton_tensors** outputs) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(outputs, fn, "outputs"));
    *outputs = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(model, fn, "model"));
    CARTON_RETURN_IF_ERROR(capi::Require(inputs, fn, "inputs"));
    std::lock_guard<std::mutex> lock(model->mu);
    if (model->closed) return capi::ModelClosed(fn, *model);
    CARTON_ASSIGN_OR_RETURN(std::vector<Tensor> out, model->model.Infer(inputs->tensors));
    *outputs = capi::NewHandle<carton_tensors>(std::move(out));
    return Status::Ok();
  });
}

}  // extern "C"
