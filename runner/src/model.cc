// Model (model.h): load a carton, start its runner, check inputs, infer.
#include "carton/runner/model.h"

#include <iostream>
#include <utility>

#include "carton/runner/client.h"
#include "carton/runner/input_check.h"

namespace carton::runner {

std::string DeclaredInputsText(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (const auto& spec : specs) {
    if (!s.empty()) s += ", ";
    s += spec.name + " " + std::string(DataTypeName(spec.dtype));
  }
  return s;
}

struct Model::Impl {
  explicit Impl(loader::LoadedCarton loaded) : carton(std::move(loaded)) {}

  std::string location;
  loader::LoadedCarton carton;
  RunnerCandidate runner;
  loader::Device device;
  bool lenient = false;
  std::function<void(std::string_view)> on_warning;
  std::optional<RunnerProcess> process;  // empty once closed

  Status Closed() const { return InvalidArgument(location + ": the model is closed"); }
};

namespace {

// carton.toml's [runner] with the overrides of `options`.
RunnerInfo WantedRunner(const CartonConfig& config, const ModelOptions& options) {
  RunnerInfo wanted = config.runner;
  if (options.runner_name) wanted.runner_name = *options.runner_name;
  if (options.framework_version) wanted.required_framework_version = *options.framework_version;
  return wanted;
}

void DefaultWarning(std::string_view text) { std::cerr << "carton: warning: " << text << '\n'; }

// The one check of a call's inputs against the declarations, in the one
// wording every shell shows: refused, or with `lenient` a warning.
Status FitInputs(const std::string& location, const CartonConfig& config,
                 const std::vector<Tensor>& inputs, bool lenient,
                 const std::function<void(std::string_view)>& on_warning) {
  const auto& declared = config.inputs;
  Status s = runner::CheckInputs(declared, inputs);
  if (s.ok()) return s;
  std::string message = s.WithContext(location).message();
  if (!declared.empty()) message += " (declared inputs: " + DeclaredInputsText(declared) + ")";
  if (lenient) {
    on_warning(message);
    return Status::Ok();
  }
  return Status(s.code(), message + "; lenient mode (--lenient, lenient=True) runs it anyway",
                kInputsDoNotFit);
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Result<Model> Model::Open(const Location& location, const Environment& environment,
                          const ModelOptions& options) {
  SourceOptions source_options;
  source_options.operation = "load";
  source_options.progress = options.load.progress;
  CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(location, environment, source_options));
  CARTON_ASSIGN_OR_RETURN(loader::LoadedCarton carton, loader::Load(*source, options.load));
  // A misfit costs no runner start (in lenient mode Infer warns of it).
  if (options.first_inputs != nullptr && !options.lenient) {
    CARTON_RETURN_IF_ERROR(
        FitInputs(location.text(), carton.config(), *options.first_inputs, false, {}));
  }
  auto model = Start(std::move(carton), options);
  if (!model.ok()) return model.status();
  model->impl_->location = location.text();
  return model;
}

Result<Model> Model::Start(loader::LoadedCarton carton, const ModelOptions& options) {
  auto impl = std::make_unique<Impl>(std::move(carton));
  const loader::LoadedCarton& loaded = impl->carton;
  impl->location = loaded.root_dir();
  impl->lenient = options.lenient;
  impl->on_warning = options.on_warning ? options.on_warning : DefaultWarning;
  impl->device = options.device ? *options.device : loader::DefaultDevice();
  CARTON_ASSIGN_OR_RETURN(impl->runner, SelectRunner(WantedRunner(loaded.config(), options)));
  RunnerProcessOptions start;
  start.load_timeout = options.load_timeout;
  start.infer_timeout = options.infer_timeout;
  start.opts = options.runner_opts;
  start.lenient = options.lenient;
  start.on_stderr_line = options.on_stderr_line;
  start.device = impl->device;
  CARTON_ASSIGN_OR_RETURN(RunnerProcess process,
                          RunnerProcess::Start(impl->runner.path, loaded.root_dir(), start));
  impl->process.emplace(std::move(process));
  return Model(std::move(impl));
}

const loader::LoadedCarton& Model::carton() const { return impl_->carton; }
const CartonConfig& Model::config() const { return impl_->carton.config(); }
const RunnerCandidate& Model::runner() const { return impl_->runner; }
const loader::Device& Model::device() const { return impl_->device; }
const std::string& Model::location() const { return impl_->location; }

Status Model::CheckInputs(const std::vector<Tensor>& inputs) const {
  return FitInputs(impl_->location, config(), inputs, impl_->lenient, impl_->on_warning);
}

Result<std::vector<Tensor>> Model::Infer(const std::vector<Tensor>& inputs) {
  if (!impl_->process) return impl_->Closed();
  CARTON_RETURN_IF_ERROR(CheckInputs(inputs));
  return impl_->process->Infer(inputs);
}

Status Model::SelfTest(const safetensors::CompareOptions& compare, SelfTestReport* report) {
  *report = SelfTestReport{};
  if (!impl_->process) return impl_->Closed();
  Status runner_failure;
  *report = RunSelfTests(
      impl_->carton,
      [&](const std::vector<Tensor>& in) -> Result<std::vector<Tensor>> {
        auto out = impl_->process->Infer(in);
        // A runner that crashed or hung is trouble, not a verdict on the
        // model.
        if (!out.ok() && out.status().code() == StatusCode::kInternal && runner_failure.ok()) {
          runner_failure = out.status();
        }
        return out;
      },
      compare);
  return runner_failure;
}

Status Model::Close() {
  if (!impl_->process) return Status::Ok();
  Status s = impl_->process->Close();
  impl_->process.reset();
  return s;
}

}  // namespace carton::runner
