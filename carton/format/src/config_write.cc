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

// A comment line, in the commented form only.
class Notes {
 public:
  explicit Notes(bool on) : on_(on) {}
  void operator()(std::string& out, std::string_view line) const {
    if (!on_) return;
    out += "# ";
    out += line;
    out += '\n';
  }
  bool on() const { return on_; }

 private:
  bool on_;
};

void AppendTensor(std::string& out, std::string_view header, const TensorSpec& t,
                  const Notes& note) {
  out += "\n[[";
  out += header;
  out += "]]\n";
  note(out, "The name callers give the tensor.");
  out += "name = ";
  AppendString(out, t.name);
  out += '\n';
  note(out, "float32, float64, string, int8, int16, int32, int64, uint8, uint16, uint32, uint64.");
  out += "dtype = ";
  AppendString(out, DataTypeName(t.dtype));
  out += '\n';
  note(out, "[dims] (integers, symbols that must agree across tensors, \"*\"), \"*\" or a symbol.");
  out += "shape = ";
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

// spec_version and the optional string fields of the top-level table, each
// absent one shown commented out in the commented form.
void AppendStringFields(std::string& out, const CartonConfig& config, const Notes& note) {
  note(out, "The carton spec version; always 1.");
  out += "spec_version = " + std::to_string(config.spec_version) + "\n";
  struct Field {
    std::string_view key;
    const std::optional<std::string>& value;
    std::string_view note;
    std::string_view example;
    bool multiline;
  };
  const Field fields[] = {
      {"model_name", config.model_name, "The model's name.", "\"my_model\"", false},
      {"short_description", config.short_description,
       "What the model does, in 100 characters or less.", "\"...\"", false},
      {"model_description", config.model_description,
       "A longer description (markdown; images as https URLs or @misc/ paths).", "\"\"\"...\"\"\"",
       true},
      {"license", config.license, "The license, an SPDX expression.", "\"Apache-2.0\"", false},
      {"repository", config.repository, "The repository of the code that packs the model.",
       "\"https://...\"", false},
      {"homepage", config.homepage, "The model's homepage.", "\"https://...\"", false},
  };
  for (const Field& f : fields) {
    note(out, f.note);
    if (!f.value && note.on()) {
      out += "# " + std::string(f.key) + " = " + std::string(f.example) + "\n";
    }
    AppendStringField(out, f.key, f.value, f.multiline);
  }
}

// required_platforms, or in the commented form an example when empty.
void AppendPlatforms(std::string& out, const std::vector<std::string>& platforms,
                     const Notes& note) {
  if (platforms.empty()) {
    note(out, "Target triples the model runs on; empty or absent: all.");
    if (note.on()) out += "# required_platforms = [\"x86_64-unknown-linux-gnu\"]\n";
  }
  if (!platforms.empty()) {
    out += "required_platforms = [";
    for (std::size_t i = 0; i < platforms.size(); ++i) {
      if (i > 0) out += ", ";
      AppendString(out, platforms[i]);
    }
    out += "]\n";
  }
}

// The [[input]] and [[output]] tables, or in the commented form an example
// when there are none.
void AppendTensors(std::string& out, const CartonConfig& config, const Notes& note) {
  if (config.inputs.empty() && config.outputs.empty() && note.on()) {
    out += "\n";
    note(out, "Inputs and outputs, in order (optional; declare all of them or none):");
    note(out, "[[input]]");
    note(out, "name = \"x\"");
    note(out, "dtype = \"float32\"");
    note(out, "shape = [\"batch_size\", 3]");
  }
  for (const TensorSpec& t : config.inputs) AppendTensor(out, "input", t, note);
  for (const TensorSpec& t : config.outputs) AppendTensor(out, "output", t, note);
}

// The [[self_test]] and [[example]] tables, or in the commented form an
// example self-test when there is none.
void AppendTestsAndExamples(std::string& out, const CartonConfig& config, const Notes& note) {
  if (config.self_tests.empty() && note.on()) {
    out += "\n";
    note(out, "Self-tests (optional): inputs and the outputs expected, tensors of");
    note(out, "tensor_data/ (`carton tensors import x.safetensors tensor_data/` writes them);");
    note(out, "`carton self-test` runs them, `carton verify` checks they exist.");
    note(out, "[[self_test]]");
    note(out, "name = \"one batch\"");
    note(out, "inputs = { x = \"@tensor_data/x\" }");
    note(out, "expected_out = { y = \"@tensor_data/y\" }");
  }
  for (const SelfTest& t : config.self_tests) {
    out += "\n[[self_test]]\n";
    AppendStringField(out, "name", t.name);
    AppendStringField(out, "description", t.description, true);
    note(out, "Input tensors from tensor_data/index.toml, by input name.");
    AppendRefs(out, "inputs", t.inputs);
    if (t.expected_out) {
      note(out, "The outputs expected (compared like numpy.allclose).");
      AppendRefs(out, "expected_out", *t.expected_out);
    }
  }
  for (const Example& e : config.examples) {
    out += "\n[[example]]\n";
    AppendStringField(out, "name", e.name);
    AppendStringField(out, "description", e.description, true);
    AppendRefs(out, "inputs", e.inputs);
    AppendRefs(out, "sample_out", e.sample_out);
  }
}

// The [runner] table and its [runner.opts], last in the file.
void AppendRunner(std::string& out, const RunnerInfo& r, const Notes& note) {
  out += "\n[runner]\n";
  note(out, "The runner that runs the model (carton runners lists those installed).");
  out += "runner_name = ";
  AppendString(out, r.runner_name);
  out += "\n";
  note(out, "The framework versions the model needs, a semver requirement (=1.13.1, >=2.0).");
  out += "required_framework_version = ";
  AppendString(out, r.required_framework_version);
  out += "\n";
  note(out, "The version of model/'s layout the runner expects; 1 unless it says otherwise.");
  out += "runner_compat_version = " + std::to_string(r.runner_compat_version) + "\n";
  if (!r.opts.empty()) {
    out += "\n";
    note(out, "Options for the runner (each can be overridden at run time with --opt).");
    out += "[runner.opts]\n";
    for (const auto& [name, opt] : r.opts) {
      AppendKey(out, name);
      out += " = ";
      AppendOpt(out, opt);
      out += '\n';
    }
  }
}

}  // namespace

Result<std::string> WriteConfig(const CartonConfig& config, bool commented) {
  CARTON_RETURN_IF_ERROR(ValidateConfig(config));
  const Notes note(commented);
  std::string out;
  note(out, "carton.toml: what carton needs to know about the model (spec v1).");
  note(out, "Optional fields are commented out; remove the '# ' to set one.");
  note(out, "");
  AppendStringFields(out, config, note);
  AppendPlatforms(out, config.required_platforms, note);

  AppendTensors(out, config, note);
  AppendTestsAndExamples(out, config, note);
  AppendRunner(out, config.runner, note);
  return out;
}

}  // namespace carton
