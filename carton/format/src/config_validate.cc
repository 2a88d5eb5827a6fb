// The value rules of carton.toml and ValidateConfig.

#include <limits>

#include "carton/common/quote.h"
#include "carton/common/utf8.h"
#include "carton/format/config.h"
#include "carton/format/semver.h"
#include "config_rules.h"

namespace carton {
namespace format_internal {
namespace {

// The most bytes of a carton.toml value quoted in a message.
constexpr std::size_t kMaxQuotedConfigValueBytes = 120;
constexpr std::string_view kTensorDataPrefix = "@tensor_data/";
constexpr std::string_view kMiscPrefix = "@misc/";

bool IsTripleChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

bool HasNonEmptySuffix(std::string_view s, std::string_view prefix) {
  return s.size() > prefix.size() && s.starts_with(prefix);
}

}  // namespace

std::string CheckRunnerName(std::string_view name) {
  return name.empty() ? "must not be empty" : "";
}

std::string CheckFrameworkVersion(std::string_view req) {
  Result<VersionReq> parsed = VersionReq::Parse(req);
  if (parsed.ok()) return "";
  // The semver message repeats what the predicate already says.
  std::string_view reason = parsed.status().message();
  constexpr std::string_view kRepeated = "invalid version requirement: ";
  if (reason.starts_with(kRepeated)) reason.remove_prefix(kRepeated.size());
  return "is not a valid version requirement (" + QuoteForMessage(req) +
         "): " + std::string(reason);
}

std::string CheckPlatform(std::string_view triple) {
  std::size_t components = 1;
  bool ok = !triple.empty();
  char prev = '-';
  for (char c : triple) {
    if (c == '-') {
      if (prev == '-') ok = false;  // empty component
      ++components;
    } else if (!IsTripleChar(c)) {
      ok = false;
    }
    prev = c;
  }
  if (prev == '-') ok = false;
  if (ok && (components == 3 || components == 4)) return "";
  return "must be a target triple such as \"x86_64-unknown-linux-gnu\" (got " +
         QuoteForMessage(triple) + ")";
}

std::string CheckSelfTestRef(std::string_view ref) {
  if (HasNonEmptySuffix(ref, kTensorDataPrefix)) return "";
  return "must be \"@tensor_data/<name>\" (got " + QuoteForMessage(ref) + ")";
}

std::string CheckExampleRef(std::string_view ref) {
  if (HasNonEmptySuffix(ref, kTensorDataPrefix) || HasNonEmptySuffix(ref, kMiscPrefix)) return "";
  return "must be \"@tensor_data/<name>\" or \"@misc/<path>\" (got " + QuoteForMessage(ref) + ")";
}

std::string CheckSpecVersion(std::int64_t v) {
  if (v == kConfigSpecVersion) return "";
  return "spec_version " + std::to_string(v) + " is not supported (this library reads version " +
         std::to_string(kConfigSpecVersion) + ")";
}

std::string QuoteForMessage(std::string_view s) {
  return carton::QuoteForMessage(s, kMaxQuotedConfigValueBytes);
}

bool IsBareKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string KeyForPath(std::string_view key) {
  return IsBareKey(key) ? std::string(key) : QuoteForMessage(key);
}

}  // namespace format_internal

namespace {

using namespace format_internal;

constexpr std::uint64_t kMaxTomlInteger = std::numeric_limits<std::int64_t>::max();

// Collects the first problem found while walking a config.
class Validator {
 public:
  bool failed() const { return !message_.empty(); }
  const std::string& message() const { return message_; }

  void Rule(const std::string& path, const std::string& problem) {
    if (!failed() && !problem.empty()) message_ = path + " " + problem;
  }
  void Text(const std::string& path, std::string_view s) {
    Rule(path, IsValidUtf8(s) ? "" : "is not valid UTF-8");
  }
  void OptionalText(const std::string& path, const std::optional<std::string>& s) {
    if (s) Text(path, *s);
  }
  void Fits(const std::string& path, std::uint64_t v) {
    Rule(path,
         v <= kMaxTomlInteger ? "" : "is too large for a TOML integer (" + std::to_string(v) + ")");
  }

  void Tensor(const std::string& path, const TensorSpec& t) {
    Text(path + ".name", t.name);
    OptionalText(path + ".description", t.description);
    OptionalText(path + ".internal_name", t.internal_name);
    if (const auto* symbol = std::get_if<SymbolDim>(&t.shape)) {
      Symbol(path + ".shape", *symbol);
    } else if (const auto* dims = std::get_if<std::vector<Dimension>>(&t.shape)) {
      for (std::size_t i = 0; i < dims->size(); ++i) {
        std::string dim_path = path + ".shape[" + std::to_string(i) + "]";
        if (const auto* size = std::get_if<std::uint64_t>(&(*dims)[i])) Fits(dim_path, *size);
        if (const auto* sym = std::get_if<SymbolDim>(&(*dims)[i])) Symbol(dim_path, *sym);
      }
    }
  }

  void Symbol(const std::string& path, const SymbolDim& s) {
    Text(path, s.name);
    Rule(path, s.name == "*" ? "symbol must not be \"*\" (use AnyDim)" : "");
  }

  void Refs(const std::string& path, const TensorRefs& refs,
            std::string (*check)(std::string_view)) {
    for (const auto& [name, ref] : refs) {
      std::string ref_path = path + "." + KeyForPath(name);
      Text(ref_path, name);
      Text(ref_path, ref);
      Rule(ref_path, check(ref));
    }
  }

 private:
  std::string message_;
};

}  // namespace

Status ValidateConfig(const CartonConfig& config) {
  if (std::string e = CheckSpecVersion(config.spec_version); !e.empty()) return Unsupported(e);
  Validator v;
  v.OptionalText("model_name", config.model_name);
  v.OptionalText("short_description", config.short_description);
  v.OptionalText("model_description", config.model_description);
  v.OptionalText("license", config.license);
  v.OptionalText("repository", config.repository);
  v.OptionalText("homepage", config.homepage);
  for (std::size_t i = 0; i < config.required_platforms.size(); ++i) {
    v.Rule("required_platforms[" + std::to_string(i) + "]",
           CheckPlatform(config.required_platforms[i]));
  }
  for (std::size_t i = 0; i < config.inputs.size(); ++i) {
    v.Tensor("input[" + std::to_string(i) + "]", config.inputs[i]);
  }
  for (std::size_t i = 0; i < config.outputs.size(); ++i) {
    v.Tensor("output[" + std::to_string(i) + "]", config.outputs[i]);
  }
  for (std::size_t i = 0; i < config.self_tests.size(); ++i) {
    const SelfTest& t = config.self_tests[i];
    std::string path = "self_test[" + std::to_string(i) + "]";
    v.OptionalText(path + ".name", t.name);
    v.OptionalText(path + ".description", t.description);
    v.Refs(path + ".inputs", t.inputs, CheckSelfTestRef);
    if (t.expected_out) v.Refs(path + ".expected_out", *t.expected_out, CheckSelfTestRef);
  }
  for (std::size_t i = 0; i < config.examples.size(); ++i) {
    const Example& e = config.examples[i];
    std::string path = "example[" + std::to_string(i) + "]";
    v.OptionalText(path + ".name", e.name);
    v.OptionalText(path + ".description", e.description);
    v.Refs(path + ".inputs", e.inputs, CheckExampleRef);
    v.Refs(path + ".sample_out", e.sample_out, CheckExampleRef);
  }
  const RunnerInfo& r = config.runner;
  v.Text("runner.runner_name", r.runner_name);
  v.Rule("runner.runner_name", CheckRunnerName(r.runner_name));
  v.Text("runner.required_framework_version", r.required_framework_version);
  v.Rule("runner.required_framework_version", CheckFrameworkVersion(r.required_framework_version));
  v.Fits("runner.runner_compat_version", r.runner_compat_version);
  for (const auto& [name, opt] : r.opts) {
    std::string path = "runner.opts." + KeyForPath(name);
    v.Text(path, name);
    if (const auto* s = std::get_if<std::string>(&opt)) v.Text(path, *s);
  }
  if (v.failed()) return InvalidArgument(v.message());
  return Status::Ok();
}

}  // namespace carton
