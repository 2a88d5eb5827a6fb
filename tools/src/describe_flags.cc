#include "describe_flags.h"

#include <cctype>

#include "carton/format/semver.h"
#include "carton/runner/runner.h"

namespace carton::cli {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Result<Dimension> ParseDim(std::string_view text, const std::string& flag) {
  std::string d = Trim(text);
  if (d.empty()) return InvalidArgument(flag + ": a dimension is empty");
  if (d == "*") return Dimension(AnyDim{});
  if (AllDigits(d)) {
    if (d.size() > 18) return InvalidArgument(flag + ": dimension " + d + " is too large");
    return Dimension(static_cast<std::uint64_t>(std::stoull(d)));
  }
  return Dimension(SymbolDim{d});
}

// SHAPE: "[d, ...]" (a list; "[]" is a scalar), "*" (any shape), or a
// symbol naming the whole shape.
Result<Shape> ParseShape(std::string_view text, const std::string& flag) {
  std::string s = Trim(text);
  if (s.empty() || s == "*") return Shape(AnyDim{});
  if (s.front() != '[') {
    if (s.find_first_of(",]") != std::string::npos) {
      return InvalidArgument(flag + ": a shape with dimensions is written in brackets, e.g. " +
                             "[batch,3]");
    }
    return Shape(SymbolDim{s});
  }
  if (s.back() != ']') return InvalidArgument(flag + ": shape " + s + " lacks its closing ]");
  std::string inner = Trim(std::string_view(s).substr(1, s.size() - 2));
  std::vector<Dimension> dims;
  if (!inner.empty()) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = inner.find(',', start);
      CARTON_ASSIGN_OR_RETURN(
          Dimension d,
          ParseDim(std::string_view(inner).substr(
                       start, comma == std::string::npos ? std::string::npos : comma - start),
                   flag));
      dims.push_back(std::move(d));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return Shape(std::move(dims));
}

std::string ValidDtypes() {
  std::string out;
  for (DataType d : AllDataTypes()) out += (out.empty() ? "" : ", ") + std::string(DataTypeName(d));
  return out;
}

// NAME:DTYPE[:SHAPE]
Result<TensorSpec> ParseTensorSpec(const std::string& text, const char* flag_name) {
  const std::string flag = std::string(flag_name) + " " + text;
  const std::size_t first = text.find(':');
  if (first == std::string::npos || first == 0) {
    return InvalidArgument(flag + ": want NAME:DTYPE[:SHAPE], e.g. x:float32:[batch,3]");
  }
  TensorSpec spec;
  spec.name = text.substr(0, first);
  const std::size_t second = text.find(':', first + 1);
  const std::string dtype =
      text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  auto parsed = ParseDataType(dtype);
  if (!parsed) {
    return InvalidArgument(flag + ": unknown dtype \"" + dtype + "\" (valid: " + ValidDtypes() +
                           ")");
  }
  spec.dtype = *parsed;
  if (second != std::string::npos) {
    CARTON_ASSIGN_OR_RETURN(spec.shape, ParseShape(text.substr(second + 1), flag));
  }
  return spec;
}

// NAME=TENSOR,... where TENSOR is a tensor_data name or an @-reference.
Result<TensorRefs> ParseRefs(std::string_view text, const std::string& flag) {
  TensorRefs refs;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    std::string part = Trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
      return InvalidArgument(flag + ": want NAME=TENSOR pairs, not \"" + part + "\"");
    }
    std::string ref = part.substr(eq + 1);
    if (ref.front() != '@') ref = "@tensor_data/" + ref;
    refs[part.substr(0, eq)] = ref;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return refs;
}

// IN=TENSOR,...[:OUT=TENSOR,...]
Result<carton::SelfTest> ParseSelfTest(const std::string& text) {
  const std::string flag = "--self-test " + text;
  carton::SelfTest t;
  const std::size_t colon = text.find(':');
  CARTON_ASSIGN_OR_RETURN(t.inputs, ParseRefs(std::string_view(text).substr(0, colon), flag));
  if (colon != std::string::npos) {
    CARTON_ASSIGN_OR_RETURN(t.expected_out,
                            ParseRefs(std::string_view(text).substr(colon + 1), flag));
  }
  return t;
}

}  // namespace

bool AnyDescribeFlag(const DescribeArgs& a) { return !GivenDescribeFlags(a).empty(); }

std::string GivenDescribeFlags(const DescribeArgs& a) {
  std::string out;
  auto add = [&](bool given, const char* flag) {
    if (given) out += (out.empty() ? "" : ", ") + std::string(flag);
  };
  add(!a.runner.empty(), "--runner");
  add(!a.framework_version.empty(), "--framework-version");
  add(a.compat_given, "--compat-version");
  add(!a.name.empty(), "--name");
  add(!a.description.empty(), "--description");
  add(!a.license.empty(), "--license");
  add(!a.opts.empty(), "--opt");
  add(!a.inputs.empty(), "--input");
  add(!a.outputs.empty(), "--output-tensor");
  add(!a.self_tests.empty(), "--self-test");
  return out;
}

Status ApplyDescribeFlags(const DescribeArgs& a, CartonConfig* c) {
  if (!a.runner.empty()) c->runner.runner_name = a.runner;
  if (!a.framework_version.empty()) {
    auto req = VersionReq::Parse(a.framework_version);
    if (!req.ok()) {
      return InvalidArgument("--framework-version \"" + a.framework_version +
                             "\": " + req.status().message());
    }
    c->runner.required_framework_version = a.framework_version;
  }
  if (a.compat_given) c->runner.runner_compat_version = a.compat_version;
  if (!a.name.empty()) c->model_name = a.name;
  if (!a.description.empty()) c->short_description = a.description;
  if (!a.license.empty()) c->license = a.license;
  for (const auto& opt : a.opts) {
    const auto eq = opt.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--opt wants KEY=VALUE, not \"" + opt + "\"");
    }
    c->runner.opts[opt.substr(0, eq)] = runner::ParseRunnerOpt(opt.substr(eq + 1));
  }
  auto specs = [](const std::vector<std::string>& flags, const char* name,
                  std::vector<TensorSpec>* out) -> Status {
    if (flags.empty()) return Status::Ok();
    out->clear();
    for (const auto& f : flags) {
      CARTON_ASSIGN_OR_RETURN(TensorSpec s, ParseTensorSpec(f, name));
      out->push_back(std::move(s));
    }
    return Status::Ok();
  };
  CARTON_RETURN_IF_ERROR(specs(a.inputs, "--input", &c->inputs));
  CARTON_RETURN_IF_ERROR(specs(a.outputs, "--output-tensor", &c->outputs));
  if (!a.self_tests.empty()) {
    c->self_tests.clear();
    for (const auto& t : a.self_tests) {
      CARTON_ASSIGN_OR_RETURN(carton::SelfTest s, ParseSelfTest(t));
      c->self_tests.push_back(std::move(s));
    }
  }
  Status valid = ValidateConfig(*c);
  if (!valid.ok())
    return InvalidArgument("the flags describe an invalid carton.toml: " + valid.message());
  return Status::Ok();
}

Result<CartonConfig> ConfigFromFlags(const DescribeArgs& a) {
  if (a.runner.empty()) {
    return InvalidArgument(
        "--runner is required to describe the model (the runner that runs it, e.g. "
        "torchscript or python), with --framework-version");
  }
  if (a.framework_version.empty()) {
    return InvalidArgument(
        "--framework-version is required with --runner: the framework versions the model "
        "needs, as a semver requirement such as =1.13.1 or >=2.0");
  }
  CartonConfig c;
  c.runner.runner_compat_version = kDefaultRunnerCompatVersion;
  CARTON_RETURN_IF_ERROR(ApplyDescribeFlags(a, &c));
  return c;
}

}  // namespace carton::cli
