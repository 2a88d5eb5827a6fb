// Loading a model and running it: the carton through the manifest-hash
// cache (loader::Load), the runner picked by runner::SelectRunner, and one
// runner process in serve mode (runner::RunnerProcess) that every
// carton_infer and carton_self_test goes through, as Python's Model does.
#include "model.h"

#include <mutex>
#include <string>

#include "carton/format/semver.h"
#include "carton/runner/input_check.h"
#include "errors.h"
#include "handles.h"

namespace carton::capi {
namespace {

// "x float32, y int64": the declared inputs, for messages about a wrong one.
std::string DeclaredInputs(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (const auto& spec : specs) {
    if (!s.empty()) s += ", ";
    s += spec.name + " " + std::string(DataTypeName(spec.dtype));
  }
  return s;
}

// Loads the carton and starts its runner, as `options` say.
Result<carton_model*> Load(const std::string& text, const carton_load_options& options) {
  CARTON_ASSIGN_OR_RETURN(Location location, Location::Parse(text));
  // A GPU that is not there is refused before the carton loads.
  CARTON_ASSIGN_OR_RETURN(loader::Device device, loader::ResolveDevice(options.device));
  loader::LoadOptions load;
  load.cache_dir = options.cache_dir;
  CARTON_ASSIGN_OR_RETURN(loader::LoadedCarton carton, loader::Load(location, load));
  // The overrides replace carton.toml's runner fields for selection.
  RunnerInfo wanted = carton.config().runner;
  if (options.runner_name) wanted.runner_name = *options.runner_name;
  if (options.framework_version) wanted.required_framework_version = *options.framework_version;
  CARTON_ASSIGN_OR_RETURN(runner::RunnerCandidate candidate, runner::SelectRunner(wanted));
  runner::RunnerProcessOptions start;
  start.opts = options.runner_opts;
  start.device = std::move(device);
  CARTON_ASSIGN_OR_RETURN(runner::RunnerProcess process,
                          runner::RunnerProcess::Start(candidate.path, carton.root_dir(), start));
  return NewHandle<carton_model>(text, std::move(carton), std::move(candidate),
                                 std::optional<runner::RunnerProcess>(std::move(process)));
}

// Checks `inputs` against the declared [[input]]s, as `carton infer` does.
Status CheckModelInputs(const carton_model& model, const std::vector<Tensor>& inputs) {
  const auto& declared = model.carton.config().inputs;
  Status s = runner::CheckInputs(declared, inputs);
  if (s.ok() || declared.empty()) return s;
  return Status(s.code(), s.WithContext(model.location).message() +
                              " (declared inputs: " + DeclaredInputs(declared) + ")");
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
    *out = capi::NewHandle<carton_load_options>();
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
    return capi::SetText(fn, "runner_name", runner_name, &options->runner_name);
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
                         &options->framework_version);
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
    options->runner_opts[text.substr(0, eq)] = text.substr(eq + 1);
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
    options->cache_dir = dir.value_or("");
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
    const carton_load_options defaults;
    CARTON_ASSIGN_OR_RETURN(*out, capi::Load(location, options ? *options : defaults));
    return Status::Ok();
  });
}

void carton_model_free(carton_model* model) { carton::capi::FreeHandle(model); }

carton_status carton_model_close(carton_model* model) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(model, fn, "model"));
    std::lock_guard<std::mutex> lock(model->mu);
    if (!model->process) return Status::Ok();
    Status s = model->process->Close();
    model->process.reset();
    return s;
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
    if (!model->process) return capi::ModelClosed(fn, *model);
    CARTON_RETURN_IF_ERROR(capi::CheckModelInputs(*model, inputs->tensors));
    CARTON_ASSIGN_OR_RETURN(std::vector<Tensor> out, model->process->Infer(inputs->tensors));
    *outputs = capi::NewHandle<carton_tensors>(std::move(out));
    return Status::Ok();
  });
}

}  // extern "C"
