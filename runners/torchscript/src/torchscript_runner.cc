#include "carton/torchscript/torchscript_runner.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "carton/runner/input_check.h"
#include "carton/zip/reader.h"
#include "convert.h"
#include "device.h"

#ifndef CARTON_TORCH_VERSION
#error "CARTON_TORCH_VERSION must name the libtorch version the runner is built with"
#endif

namespace carton::torchscript {
namespace {

namespace fs = std::filesystem;

constexpr char kRunnerName[] = "torchscript";
constexpr std::uint64_t kCompatVersion = 1;
constexpr char kDefaultModelFile[] = "model.pt";

// The first line of a torch exception: the rest is a C++ backtrace.
std::string TorchMessage(const std::exception& e) {
  std::string what = e.what();
  auto nl = what.find('\n');
  return nl == std::string::npos ? what : what.substr(0, nl);
}

// What a model's forward raised (a kModelError status): its own message
// first (the last line of TorchScript's report, e.g. "builtins.ValueError:
// x must be positive"), then TorchScript's traceback, without libtorch's
// C++ frames. The exception's type is the Python name before the message
// ("ValueError"), or RuntimeError for an error of libtorch's own.
Status ModelFailure(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  if (lines.empty()) lines.emplace_back("(no message)");
  std::string out = "the TorchScript model raised " + lines.back();
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) out += "\n  " + lines[i];
  ModelException raised{"RuntimeError", lines.back()};
  const std::string& last = lines.back();
  const std::size_t colon = last.find(": ");
  const std::string type = last.substr(0, colon);
  const bool named = colon != std::string::npos && !type.empty() &&
                     type.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == std::string::npos;
  if (named) {
    raised.type = type.substr(type.rfind('.') + 1);
    raised.message = last.substr(colon + 2);
  }
  return ModelError(std::move(out), std::move(raised));
}

// True when `path` is the zip torch.save writes (<name>/data.pkl, and
// none of TorchScript's code/ or constants.pkl): a pickle the TorchScript
// runner cannot load.
bool IsTorchSavePickle(const std::string& path) {
  auto zip = ZipReader::Open(path);
  if (!zip.ok()) return false;
  bool pickle = false;
  for (const auto& e : zip->entries()) {
    const std::string_view name = e.name;
    if (name.find("/code/") != std::string_view::npos || name.ends_with("constants.pkl")) {
      return false;
    }
    pickle = pickle || name.ends_with("/data.pkl");
  }
  return pickle;
}

Result<std::int64_t> PositiveIntOpt(const std::string& key, const RunnerOpt& value) {
  const auto* i = std::get_if<std::int64_t>(&value);
  if (i == nullptr || *i <= 0 || *i > 4096) {
    return InvalidArgument("runner opt \"" + key + "\" must be an integer in [1, 4096]");
  }
  return *i;
}

// The model file: runner opt `model_path` (relative to model/, never
// leaving it), else model/model.pt.
struct ModelFileChoice {
  fs::path relative;  // inside model/
  bool from_opt = false;
};

Result<ModelFileChoice> ModelFile(const runner::LoadContext& ctx) {
  std::string rel = kDefaultModelFile;
  bool from_opt = false;
  if (auto it = ctx.opts.find("model_path"); it != ctx.opts.end()) {
    const auto* s = std::get_if<std::string>(&it->second);
    if (s == nullptr || s->empty()) {
      return InvalidArgument("runner opt \"model_path\" must be a non-empty string");
    }
    rel = *s;
    from_opt = true;
    // Accept the path written relative to the carton root, as in "model/x.pt".
    if (rel.rfind("model/", 0) == 0) rel = rel.substr(6);
  }
  fs::path p(rel);
  if (p.is_absolute()) {
    return InvalidArgument("runner opt \"model_path\" is absolute (" + rel +
                           "); it must name a file inside model/");
  }
  for (const auto& part : p) {
    if (part == "..") {
      return InvalidArgument("runner opt \"model_path\" leaves model/ (" + rel + ")");
    }
  }
  return ModelFileChoice{p, from_opt};
}

// The .pt files under `model_dir` (a few, sorted), to suggest in a message.
std::string PtFilesIn(const fs::path& model_dir) {
  constexpr std::size_t kMaxListed = 5;
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(model_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() == ".pt" && it->is_regular_file(ec)) {
      found.push_back("model/" + fs::relative(it->path(), model_dir, ec).generic_string());
    }
  }
  if (found.empty()) return "model/ holds no .pt file";
  std::sort(found.begin(), found.end());
  std::string list;
  for (std::size_t i = 0; i < found.size() && i < kMaxListed; ++i) {
    list += (i ? ", " : "") + found[i];
  }
  if (found.size() > kMaxListed) list += ", ...";
  return "model/ holds " + list;
}

class TorchScriptRunner final : public runner::Runner {
 public:
  runner::RunnerIdentity Identity() const override {
    return {kRunnerName, FrameworkVersion(), kCompatVersion};
  }

  Status Load(const std::string& model_dir, const runner::LoadContext& ctx) override {
    try {
      return LoadChecked(model_dir, ctx);
    } catch (const std::exception& e) {
      module_.reset();
      return Internal("torch failed unexpectedly: " + TorchMessage(e));
    } catch (...) {
      module_.reset();
      return Internal("torch failed unexpectedly with an exception of unknown type");
    }
  }

  Result<std::vector<runner::Tensor>> Infer(const std::vector<runner::Tensor>& inputs) override {
    // Torch reports trouble by throwing; nothing it throws may end the
    // runner. The steps below catch what they expect and name the input or
    // output concerned; this is the last resort.
    try {
      return InferChecked(inputs);
    } catch (const std::exception& e) {
      return Internal("torch failed unexpectedly: " + TorchMessage(e));
    } catch (...) {
      return Internal("torch failed unexpectedly with an exception of unknown type");
    }
  }

 private:
  Status LoadChecked(const std::string& model_dir, const runner::LoadContext& ctx) {
    config_ = ctx.config;
    lenient_ = ctx.lenient;
    quiet_misfits_ = ctx.caller_checks_inputs;
    for (const auto& [key, value] : ctx.opts) {
      if (key == "model_path") continue;
      if (key == "num_threads") {
        CARTON_ASSIGN_OR_RETURN(std::int64_t n, PositiveIntOpt(key, value));
        at::set_num_threads(static_cast<int>(n));
        std::cerr << "carton-runner-torchscript: num_threads: torch uses " << at::get_num_threads()
                  << " intra-op threads\n";
      } else if (key == "num_interop_threads") {
        CARTON_ASSIGN_OR_RETURN(std::int64_t n, PositiveIntOpt(key, value));
        try {
          at::set_num_interop_threads(static_cast<int>(n));
          std::cerr << "carton-runner-torchscript: num_interop_threads: torch uses "
                    << at::get_num_interop_threads() << " inter-op threads\n";
        } catch (const std::exception& e) {
          return InvalidArgument("runner opt \"num_interop_threads\": " + TorchMessage(e));
        }
      } else {
        std::cerr << "carton-runner-torchscript: warning: ignoring unknown runner opt \"" << key
                  << "\" (known: model_path, num_threads, num_interop_threads)\n";
      }
    }
    CARTON_ASSIGN_OR_RETURN(ModelFileChoice choice, ModelFile(ctx));
    const fs::path file = fs::path(model_dir) / choice.relative;
    const std::string shown = "model/" + choice.relative.generic_string();
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      const std::string what = fs::exists(file, ec) ? "is not a file" : "does not exist";
      if (choice.from_opt) {
        return NotFound("runner opt \"model_path\" names " + shown + ", which " + what + " (" +
                        PtFilesIn(model_dir) + ")");
      }
      return NotFound("the TorchScript model " + shown + " " + what +
                      " (the default when runner opt \"model_path\" is not set; " +
                      PtFilesIn(model_dir) + ")");
    }
    CARTON_ASSIGN_OR_RETURN(device_, ChooseTorchDevice(ctx.device));
    try {
      module_ = torch::jit::load(file.string(), device_);
      module_->eval();
    } catch (const std::exception& e) {
      module_.reset();
      if (IsTorchSavePickle(file.string())) {
        return Corrupt(shown +
                       " was written by torch.save (a pickled module or state dict), which is "
                       "not TorchScript: save the model with torch.jit.script(model).save(path) "
                       "or torch.jit.trace(model, example_inputs).save(path)");
      }
      return Corrupt("cannot load TorchScript model " + shown + ": " + TorchMessage(e));
    }
    try {
      return AnalyzeForward(shown);
    } catch (const std::exception& e) {
      module_.reset();
      return Corrupt("cannot read the forward method of " + shown + ": " + TorchMessage(e));
    }
  }

  Result<std::vector<runner::Tensor>> InferChecked(const std::vector<runner::Tensor>& inputs) {
    if (!module_) return Internal("no model loaded");
    if (Status s = runner::CheckInputs(config_.inputs, inputs); !s.ok()) {
      // --lenient: the declarations do not hold; say so and run anyway.
      if (!lenient_) return s;
      if (!quiet_misfits_) std::cerr << "warning: " << s.message() << " (run with --lenient)\n";
    }
    CARTON_ASSIGN_OR_RETURN(std::vector<c10::IValue> args, Arguments(inputs));
    if (!device_.is_cpu()) {
      // Inputs go to the model's device, outputs come back to the CPU.
      try {
        for (auto& a : args) a = ValueOnDevice(a, device_);
      } catch (const std::exception& e) {
        return Internal("moving the inputs to " + device_.str() + ": " + TorchMessage(e));
      }
    }
    c10::IValue result;
    try {
      torch::NoGradGuard no_grad;
      result = module_->forward(std::move(args));
    } catch (const std::exception& e) {
      return ModelFailure(e);
    }
    if (!device_.is_cpu()) {
      try {
        result = ValueOnDevice(result, torch::Device(torch::kCPU));
      } catch (const std::exception& e) {
        return Internal("moving the outputs from " + device_.str() + ": " + TorchMessage(e));
      }
    }
    return Outputs(result);
  }

  // Reads forward's signature once: dict mode or the positional names.
  Status AnalyzeForward(const std::string& file) {
    c10::optional<torch::jit::Method> forward = module_->find_method("forward");
    if (!forward) return InvalidArgument("TorchScript model " + file + " has no forward method");
    const auto& arguments = forward->function().getSchema().arguments();
    args_.clear();
    // arguments[0] is self.
    for (std::size_t i = 1; i < arguments.size(); ++i) args_.push_back(arguments[i]);
    dict_mode_ = args_.size() == 1 && args_[0].type()->kind() == c10::TypeKind::DictType;
    if (dict_mode_) {
      const auto& dict = args_[0].type()->expectRef<c10::DictType>();
      dict_type_name_ = args_[0].type()->annotation_str();
      if (dict.getKeyType()->kind() != c10::TypeKind::StringType) {
        return InvalidArgument("TorchScript model " + file + ": forward takes " + dict_type_name_ +
                               "; a dict of inputs must have str keys (the input names)");
      }
      dict_values_ = dict.getValueType();
      dict_of_tensors_ = dict_values_->kind() == c10::TypeKind::TensorType;
    }
    if (!dict_mode_ && !config_.inputs.empty()) {
      std::size_t required = 0;
      for (const auto& a : args_) required += a.default_value() ? 0 : 1;
      if (config_.inputs.size() < required || config_.inputs.size() > args_.size()) {
        return InvalidArgument("TorchScript model " + file + ": forward takes " +
                               std::to_string(args_.size()) +
                               " arguments but carton.toml "
                               "declares " +
                               std::to_string(config_.inputs.size()) + " inputs");
      }
    }
    return Status::Ok();
  }

  const TensorSpec* DeclaredInput(const std::string& name) const {
    for (const auto& s : config_.inputs) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }

  // The dict key of an input: its internal_name when declared with one.
  std::string DictKey(const runner::Tensor& t) const {
    const TensorSpec* spec = DeclaredInput(t.name);
    return spec && spec->internal_name ? *spec->internal_name : t.name;
  }

  // An input as a TorchScript value; torch's exceptions become errors
  // naming the input.
  static Result<c10::IValue> InputValue(const runner::Tensor& t) {
    try {
      return ToIValue(t);
    } catch (const std::exception& e) {
      return InvalidArgument("input \"" + t.name + "\": " + TorchMessage(e));
    }
  }

  // forward(self, inputs: Dict[str, Tensor]): numeric inputs only.
  Result<c10::IValue> TensorDict(const std::vector<runner::Tensor>& inputs) const {
    c10::Dict<std::string, at::Tensor> dict;
    dict.reserve(inputs.size());
    for (const auto& t : inputs) {
      if (t.dtype == DataType::kString) {
        return InvalidArgument("input \"" + t.name + "\": forward takes " + dict_type_name_ +
                               ", which cannot hold a string tensor; declare forward(self, "
                               "inputs: Dict[str, Any]) to receive strings as str and List[str]");
      }
      CARTON_ASSIGN_OR_RETURN(c10::IValue v, InputValue(t));
      dict.insert(DictKey(t), std::move(v).toTensor());
    }
    return c10::IValue(std::move(dict));
  }

  // forward(self, inputs: Dict[str, V]) for any other V (Any, a Union, ...):
  // a tensor, a str (rank-0 string tensor) or a List[str] (rank 1) per
  // input, each of which V must be able to hold.
  Result<c10::IValue> GenericDict(const std::vector<runner::Tensor>& inputs) const {
    c10::impl::GenericDict dict(c10::StringType::get(), dict_values_);
    dict.reserve(inputs.size());
    const bool holds_anything = dict_values_->kind() == c10::TypeKind::AnyType;
    for (const auto& t : inputs) {
      if (!holds_anything) {
        c10::TypePtr type = c10::ListType::ofStrings();
        if (t.dtype != DataType::kString) {
          type = c10::TensorType::get();
        } else if (t.shape.empty()) {
          type = c10::StringType::get();
        }
        if (!type->isSubtypeOf(*dict_values_)) {
          return InvalidArgument("input \"" + t.name + "\": forward takes " + dict_type_name_ +
                                 ", which cannot hold a " + type->annotation_str() + " (a " +
                                 std::string(DataTypeName(t.dtype)) + " tensor of rank " +
                                 std::to_string(t.shape.size()) + ")");
        }
      }
      CARTON_ASSIGN_OR_RETURN(c10::IValue v, InputValue(t));
      dict.insert(DictKey(t), std::move(v));
    }
    return c10::IValue(std::move(dict));
  }

  Result<std::vector<c10::IValue>> Arguments(const std::vector<runner::Tensor>& inputs) const {
    std::vector<c10::IValue> args;
    if (dict_mode_) {
      CARTON_ASSIGN_OR_RETURN(c10::IValue dict,
                              dict_of_tensors_ ? TensorDict(inputs) : GenericDict(inputs));
      args.push_back(std::move(dict));
      return args;
    }
    std::vector<const runner::Tensor*> ordered;
    if (!config_.inputs.empty()) {
      for (const auto& spec : config_.inputs) {
        for (const auto& t : inputs) {
          if (t.name == spec.name) ordered.push_back(&t);
        }
      }
    } else {
      for (const auto& a : args_) {
        const runner::Tensor* found = nullptr;
        for (const auto& t : inputs) {
          if (t.name == a.name()) found = &t;
        }
        if (found == nullptr) {
          if (a.default_value()) break;
          return InvalidArgument("forward argument \"" + a.name() +
                                 "\" has no input of that "
                                 "name (carton.toml declares no inputs to order them)");
        }
        ordered.push_back(found);
      }
      if (ordered.size() != inputs.size()) {
        return InvalidArgument("forward takes arguments named " + ArgNames() +
                               "; some inputs match none of them");
      }
    }
    for (const runner::Tensor* t : ordered) {
      CARTON_ASSIGN_OR_RETURN(c10::IValue v, InputValue(*t));
      args.push_back(std::move(v));
    }
    return args;
  }

  std::string ArgNames() const {
    std::string s;
    for (const auto& a : args_) s += (s.empty() ? "" : ", ") + a.name();
    return "(" + s + ")";
  }

  std::optional<DataType> DeclaredOutputType(const std::string& name) const {
    for (const auto& s : config_.outputs) {
      if (s.name == name) return s.dtype;
    }
    return std::nullopt;
  }

  // The output name for dict key `key`: the declared output whose
  // internal_name is `key`, else `key`.
  std::string OutputNameForKey(const std::string& key) const {
    for (const auto& s : config_.outputs) {
      if (s.internal_name && *s.internal_name == key) return s.name;
    }
    return key;
  }

  // An output as a carton tensor; torch's exceptions become errors naming
  // the output.
  Result<runner::Tensor> OutputValue(const std::string& name, const c10::IValue& v) const {
    try {
      return FromIValue(name, v, DeclaredOutputType(name));
    } catch (const std::exception& e) {
      return Unsupported("output \"" + name + "\": cannot convert the model's " +
                         TorchScriptTypeName(v) + ": " + TorchMessage(e));
    }
  }

  Result<std::vector<runner::Tensor>> Outputs(const c10::IValue& result) const {
    std::vector<runner::Tensor> out;
    auto add = [&](const std::string& name, const c10::IValue& v) -> Status {
      CARTON_ASSIGN_OR_RETURN(runner::Tensor t, OutputValue(name, v));
      out.push_back(std::move(t));
      return Status::Ok();
    };
    if (result.isGenericDict()) {
      for (const auto& item : result.toGenericDict()) {
        if (!item.key().isString()) {
          return Unsupported("the model returned " + TorchScriptTypeName(result) +
                             "; the keys of a dict of outputs must be str (the output names)");
        }
        CARTON_RETURN_IF_ERROR(add(OutputNameForKey(item.key().toStringRef()), item.value()));
      }
      return out;
    }
    std::vector<c10::IValue> items;
    bool several = false;
    if (result.isTuple()) {
      items = result.toTupleRef().elements().vec();
      several = true;
    } else if (result.isTensorList()) {
      for (const at::Tensor& t : result.toTensorVector()) items.emplace_back(t);
      several = true;
    } else {
      items.push_back(result);
    }
    const auto& declared = config_.outputs;
    if (!declared.empty() && declared.size() != items.size()) {
      return InvalidArgument("the model returned " + std::to_string(items.size()) +
                             " value(s) but carton.toml declares " +
                             std::to_string(declared.size()) + " outputs");
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::string name = !declared.empty() ? declared[i].name
                         : several         ? "output" + std::to_string(i)
                                           : std::string("output");
      CARTON_RETURN_IF_ERROR(add(name, items[i]));
    }
    return out;
  }

  CartonConfig config_;
  bool lenient_ = false;                // LoadContext::lenient
  bool quiet_misfits_ = false;          // LoadContext::caller_checks_inputs
  torch::Device device_ = torch::kCPU;  // where the module and its inputs are
  std::optional<torch::jit::Module> module_;
  std::vector<c10::Argument> args_;
  bool dict_mode_ = false;        // forward(self, inputs: Dict[str, ...])
  bool dict_of_tensors_ = false;  // ... Dict[str, Tensor]
  c10::TypePtr dict_values_;      // the dict's value type
  std::string dict_type_name_;    // "Dict[str, Any]", for messages
};

}  // namespace

std::string FrameworkVersion() { return CARTON_TORCH_VERSION; }

std::unique_ptr<runner::Runner> MakeTorchScriptRunner() {
  return std::make_unique<TorchScriptRunner>();
}

}  // namespace carton::torchscript
