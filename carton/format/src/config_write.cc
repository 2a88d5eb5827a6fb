// WriteConfig: CartonConfig -> carton.toml text, formatted here rather than
// by toml++, whose serializer sorts keys (the spec's order puts spec_version
// first and [runner] last).

#include <charconv>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "carton/common/toml_string.h"
#include "carton/format/config.h"
#include "config_rules.h"

namespace carton {
namespace {

// A TOML basic string; `multiline` writes a """ string when the value has a
// newline, which keeps long descriptions readable.
void AppendString(std::string& out, std::string_view s, bool multiline = false) {
  AppendTomlString(&out, s, multiline);
}

void AppendKey(std::string& out, std::string_view key) {
  if (format_internal::IsBareKey(key)) {
    out += key;
  } else {
    AppendString(out, key);
  }
}

// The shortest text that reads back as exactly `d`, always a TOML float.
void AppendFloat(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "nan";
    return;
  }
  if (std::isinf(d)) {
    out += d < 0 ? "-inf" : "inf";
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, static_cast<std::size_t>(end - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void AppendStringField(std::string& out, std::string_view key,
                       const std::optional<std::string>& value, bool multiline = false) {
  if (!value) return;
  out += key;
  out += " = ";
  AppendString(out, *value, multiline);
  out += '\n';
}

void AppendRefs(std::string& out, std::string_view key, const TensorRefs& refs) {
  out += key;
  out += " = {";
  bool first = true;
  for (const auto& [name, ref] : refs) {
    out += first ? " " : ", ";
    first = false;
    AppendKey(out, name);
    out += " = ";
    AppendString(out, ref);
  }
  out += refs.empty() ? "}\n" : " }\n";
}

void AppendDimension(std::string& out, const Dimension& d) {
  if (const auto* size = std::get_if<std::uint64_t>(&d)) {
    out += std::to_string(*size);
  } else if (const auto* symbol = std::get_if<SymbolDim>(&d)) {
    AppendString(out, symbol->name);
  } else {
    out += "\"*\"";
  }
}

void AppendTensor(std::string& out, std::string_view header, const TensorSpec& t) {
  out += "\n[[";
  out += header;
  out += "]]\nname = ";
  AppendString(out, t.name);
  out += "\ndtype = ";
  AppendString(out, DataTypeName(t.dtype));
  out += "\nshape = ";
  if (std::holds_alternative<AnyDim>(t.shape)) {
    out += "\"*\"";
  } else if (const auto* symbol = std::get_if<SymbolDim>(&t.shape)) {
    AppendString(out, symbol->name);
  } else {
    const auto& dims = std::get<std::vector<Dimension>>(t.shape);
    out += '[';
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (i > 0) out += ", ";
      AppendDimension(out, dims[i]);
    }
    out += ']';
  }
  out += '\n';
  AppendStringField(out, "description", t.description, true);
  AppendStringField(out, "internal_name", t.internal_name);
}

void AppendOpt(std::string& out, const RunnerOpt& opt) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          AppendFloat(out, v);
        } else {
          AppendString(out, v);
        }
      },
      opt);
}

}  // namespace

Result<std::string> WriteConfig(const CartonConfig& config) {
  CARTON_RETURN_IF_ERROR(ValidateConfig(config));
  std::string out = "spec_version = " + std::to_string(config.spec_version) + "\n";
  AppendStringField(out, "model_name", config.model_name);
  AppendStringField(out, "short_description", config.short_description);
  AppendStringField(out, "model_description", config.model_description, true);
  AppendStringField(out, "license", config.license);
  AppendStringField(out, "repository", config.repository);
  AppendStringField(out, "homepage", config.homepage);
  if (!config.required_platforms.empty()) {
    out += "required_platforms = [";
    for (std::size_t i = 0; i < config.required_platforms.size(); ++i) {
      if (i > 0) out += ", ";
      AppendString(out, config.required_platforms[i]);
    }
    out += "]\n";
  }

  for (const TensorSpec& t : config.inputs) AppendTensor(out, "input", t);
  for (const TensorSpec& t : config.outputs) AppendTensor(out, "output", t);

  for (const SelfTest& t : config.self_tests) {
    out += "\n[[self_test]]\n";
    AppendStringField(out, "name", t.name);
    AppendStringField(out, "description", t.description, true);
    AppendRefs(out, "inputs", t.inputs);
    if (t.expected_out) AppendRefs(out, "expected_out", *t.expected_out);
  }
  for (const Example& e : config.examples) {
    out += "\n[[example]]\n";
    AppendStringField(out, "name", e.name);
    AppendStringField(out, "description", e.description, true);
    AppendRefs(out, "inputs", e.inputs);
    AppendRefs(out, "sample_out", e.sample_out);
  }

  const RunnerInfo& r = config.runner;
  out += "\n[runner]\nrunner_name = ";
  AppendString(out, r.runner_name);
  out += "\nrequired_framework_version = ";
  AppendString(out, r.required_framework_version);
  out += "\nrunner_compat_version = " + std::to_string(r.runner_compat_version) + "\n";
  if (!r.opts.empty()) {
    out += "\n[runner.opts]\n";
    for (const auto& [name, opt] : r.opts) {
      AppendKey(out, name);
      out += " = ";
      AppendOpt(out, opt);
      out += '\n';
    }
  }
  return out;
}

}  // namespace carton
