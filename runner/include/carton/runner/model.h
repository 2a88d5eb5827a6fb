// Model: "load a carton and run it", the one sequence every shell (the CLI,
// the C API, Python, `carton serve`) translates to and from.
//
//   carton::Environment env = carton::loader::DefaultEnvironment().value();
//   auto model = carton::runner::Model::Open("oci://registry/team/digits:v3", env);
//   if (!model.ok()) { /* model.status(): where and why */ }
//   auto out = model->Infer(inputs);   // inputs checked against [[input]] first
//   Status s = model->Close();
//
// Open loads the carton through the manifest-hash cache (loader.h) with the
// policy `env` carries, picks its runner (select.h; carton.toml's [runner],
// or the override in ModelOptions) and starts it in serve mode on the device
// asked for (client.h). Infer checks its inputs against the carton's
// [[input]]s in the one wording every shell shows (refused, or with
// `lenient` a warning and the model runs anyway), then runs them.
//
// Errors are classified once, here: the caller's inputs are kInvalidArgument;
// an exception raised by the model's own code, while it loads or while it
// infers, is kModelError with what it raised (Status::model_exception()),
// its traceback shown once, in the message; a runner that cannot be found
// is kNotFound; one that crashes, hangs or breaks the protocol is kInternal
// naming the runner (it is then killed, and later calls fail).
//
// Ownership: a Model owns its LoadedCarton (views into the cache entry) and
// its runner process; Infer's outputs stay valid after later calls and after
// Close (client.h). Thread-safety: one Model per thread (its calls are not
// concurrent); Models of one carton may run side by side. Move-only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/environment.h"
#include "carton/carton/location.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor.h"
#include "carton/loader/device.h"
#include "carton/loader/loader.h"
#include "carton/runner/select.h"
#include "carton/runner/self_test.h"
#include "carton/safetensors/compare.h"

namespace carton::runner {

// Status::detail() of a CheckInputs refusal (kInvalidArgument): the inputs
// do not fit the declarations, which the CLI reports as bad input.
inline constexpr int kInputsDoNotFit = 1;

struct ModelOptions {
  // The runner override: these replace carton.toml's [runner] fields when
  // the runner is selected (a name, a framework version requirement).
  std::optional<std::string> runner_name;
  std::optional<std::string> framework_version;
  // --opt KEY=VALUE overrides of [runner.opts].
  std::map<std::string, std::string> runner_opts;
  // The device (loader/device.h); unset: the default, the first GPU the
  // driver lists, else the CPU.
  std::optional<loader::Device> device;
  // Inputs that break the carton's [[input]]s are a warning (on_warning),
  // and the model runs anyway: for cartons whose declarations do not hold.
  bool lenient = false;
  std::chrono::milliseconds load_timeout = std::chrono::minutes(5);
  std::chrono::milliseconds infer_timeout = std::chrono::minutes(1);
  // Each line the runner writes to stderr; unset: "[<runner>] <line>" on
  // this process's stderr (client.h).
  std::function<void(std::string_view line)> on_stderr_line;
  // Each warning (a lenient input check); unset: "carton: warning: <text>"
  // on stderr. It must not throw.
  std::function<void(std::string_view text)> on_warning;
  // How the carton is loaded (loader.h: rehashing a cache hit, progress).
  loader::LoadOptions load;
  // Inputs the caller will run first (`carton infer`'s): when they do not
  // fit the declarations they are refused (CheckInputs' error) once the
  // carton is loaded, before a runner is selected or started. Without
  // `lenient` only; null: no early check. Must outlive Open.
  const std::vector<Tensor>* first_inputs = nullptr;
};

class Model {
 public:
  // Loads the carton at `location` and starts its runner. A device that is
  // not there is refused before the carton loads. Errors: those of
  // loader::Load and OpenSource (naming the carton), SelectRunner
  // (kNotFound listing the runners and why each does not fit), and the
  // runner's start: kModelError when the model's code raised while loading.
  static Result<Model> Open(const Location& location, const Environment& environment,
                            const ModelOptions& options = {});
  // As Open, for a carton already loaded (loader::LoadUnpacked).
  static Result<Model> Start(loader::LoadedCarton carton, const ModelOptions& options = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();  // ends the runner (Close without its status)

  const loader::LoadedCarton& carton() const;
  const CartonConfig& config() const;
  // The runner chosen and the device it runs on.
  const RunnerCandidate& runner() const;
  const loader::Device& device() const;
  // How the carton was named: the prefix of messages.
  const std::string& location() const;

  // OK when `inputs` fit the declared [[input]]s (input_check.h); with
  // `lenient` a misfit is reported to on_warning and OK is returned. Errors:
  // kInvalidArgument "<location>: <what does not fit> (declared inputs: x
  // float32, y int64); lenient mode (--lenient, lenient=True) runs it
  // anyway", its detail() kInputsDoNotFit.
  Status CheckInputs(const std::vector<Tensor>& inputs) const;

  // CheckInputs, then one inference. Errors: CheckInputs'; kModelError (the
  // model raised); kInternal (the runner crashed, hung or broke the
  // protocol; later calls fail); kInvalidArgument after Close.
  Result<std::vector<Tensor>> Infer(const std::vector<Tensor>& inputs);

  // Runs every [[self_test]] (self_test.h) into `report`: a failing test is
  // in the report, not an error. Errors: kInternal when the runner crashed
  // or hung (a verdict on the runner, not the model; the report then holds
  // the tests run so far, the one that met it failed); kInvalidArgument
  // after Close.
  Status SelfTest(const safetensors::CompareOptions& compare, SelfTestReport* report);

  // Asks the runner to exit and waits for it; later calls fail. Errors:
  // kInternal if it exits badly.
  Status Close();

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "x float32, y int64": the declared inputs, for messages about a wrong one.
std::string DeclaredInputsText(const std::vector<TensorSpec>& specs);

}  // namespace carton::runner
