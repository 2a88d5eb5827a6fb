// ParseConfig: carton.toml text -> CartonConfig. The only config file that includes
// toml++; its exceptions stop here.

#include "carton/format/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "config_rules.h"
#include "toml_util.h"

namespace carton {
namespace {

using namespace format_internal;

std::string_view TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// The edit distance of `a` and `b` with adjacent transpositions (optimal
// string alignment), for "did you mean" hints on short keys.
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// Keys longer than this get no hint (and no quadratic table).
constexpr std::size_t kMaxHintedKey = 64;

// The known key nearest to `key`, if it is a likely misspelling.
using Keys = std::vector<std::string_view>;

std::optional<std::string_view> NearestKey(std::string_view key, const Keys& known) {
  if (key.size() > kMaxHintedKey) return std::nullopt;
  std::optional<std::string_view> best;
  std::size_t best_distance = key.size() <= 4 ? 1 : 2;
  for (std::string_view k : known) {
    const std::size_t distance = EditDistance(key, k);
    if (distance <= best_distance) {
      if (!best || distance < best_distance) best = k;
      best_distance = distance;
    }
  }
  return best;
}

const Keys& RunnerKeys() {
  static const Keys keys = {"runner_name", "required_framework_version", "runner_compat_version",
                            "opts"};
  return keys;
}

class ConfigParser {
 public:
  ConfigParser(std::string_view source, ConfigParseDetails* details)
      : source_(source), details_(details) {}

  Result<CartonConfig> Parse(const toml::table& root);

 private:
  // "<source>:<line>:<column>", or just the source if `where` has no place.
  std::string Where(const toml::node* where) const {
    std::string out(source_);
    if (where != nullptr && where->source().begin.line > 0) {
      out += ":" + std::to_string(where->source().begin.line) + ":" +
             std::to_string(where->source().begin.column);
    }
    return out;
  }
  Status Fail(const toml::node* where, const std::string& path, std::string_view problem) const {
    return Corrupt(Where(where) + ": " + path + " " + std::string(problem));
  }
  Status WrongType(const toml::node& n, const std::string& path, std::string_view wanted) const {
    return Fail(&n, path,
                "must be " + std::string(wanted) + " (got " + std::string(TypeName(n)) + ")");
  }
  Status Check(const toml::node& n, const std::string& path, const std::string& problem) const {
    return problem.empty() ? Status::Ok() : Fail(&n, path, problem);
  }

  // `table` is the table holding `key`, or nullptr for the root.
  Status Missing(const toml::table* table, const std::string& path) const {
    return Fail(table, path, "is missing");
  }

  Status GetString(const toml::table& t, const toml::table* where, std::string_view key,
                   const std::string& path, bool required, std::optional<std::string>& out) const;
  Status GetInteger(const toml::table& t, const toml::table* where, std::string_view key,
                    const std::string& path, std::int64_t& out) const;
  Status GetTable(const toml::node& n, const std::string& path, const toml::table*& out) const;
  // Each element of the array `key` (absent = none) must be a table.
  Status GetTables(const toml::table& root, std::string_view key,
                   std::vector<const toml::table*>& out) const;

  Status ParseTensor(const toml::table& t, const std::string& path, TensorSpec& out) const;
  Status ParseShape(const toml::node& n, const std::string& path, Shape& out) const;
  Status ParseRefs(const toml::table& t, std::string_view key, const std::string& path,
                   std::string (*check)(std::string_view), bool required,
                   std::optional<TensorRefs>& out) const;
  Status ParsePlatforms(const toml::table& root, std::vector<std::string>& out) const;
  Status ParseRunner(const toml::table& root, RunnerInfo& out) const;
  Status ParseOpts(const toml::table& runner, std::map<std::string, RunnerOpt>& out) const;
  // spec_version, first: a newer spec may change any other field.
  Status ParseSpecVersion(const toml::table& root, std::int64_t& out) const;
  // The optional string fields of the root table (model_name, license, ...).
  Status ParseStringFields(const toml::table& root, CartonConfig& out) const;
  // The [[input]] and [[output]] tables.
  Status ParseTensors(const toml::table& root, CartonConfig& out) const;
  // The [[self_test]] tables, noting where each starts in details_.
  Status ParseSelfTests(const toml::table& root, std::vector<SelfTest>& out) const;
  // The [[example]] tables, noting where each starts in details_.
  Status ParseExamples(const toml::table& root, std::vector<Example>& out) const;

  // Notes each key of `t` outside `known` in details_->warnings. `where`
  // names the table ("" for the root, "[runner]", "[[input]] 2").
  void WarnUnknownKeys(const toml::table& t, std::string_view where, const Keys& known) const;
  TextPosition PositionOf(const toml::node& n) const {
    return {static_cast<std::uint32_t>(n.source().begin.line),
            static_cast<std::uint32_t>(n.source().begin.column)};
  }

  std::string_view source_;
  ConfigParseDetails* details_;
  // Unknown keys, by place in the text, for details_->warnings.
  mutable std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, std::string>> warnings_;

 public:
  // Moves the warnings into details_, in the order of the text.
  void FinishWarnings() {
    if (details_ == nullptr) return;
    std::stable_sort(warnings_.begin(), warnings_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& w : warnings_) details_->warnings.push_back(std::move(w.second));
  }
};

void ConfigParser::WarnUnknownKeys(const toml::table& t, std::string_view where,
                                   const Keys& known) const {
  if (details_ == nullptr) return;
  for (auto&& [key, value] : t) {
    const std::string_view name = key.str();
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string line = std::string(source_);
    if (key.source().begin.line > 0) {
      line += ":" + std::to_string(key.source().begin.line) + ":" +
              std::to_string(key.source().begin.column);
    }
    line += ": unknown key " + QuoteForMessage(name);
    if (!where.empty()) line += " in " + std::string(where);
    if (auto near = NearestKey(name, known)) {
      line += " (did you mean \"" + std::string(*near) + "\"?)";
    } else if (where.empty() &&
               std::find(RunnerKeys().begin(), RunnerKeys().end(), name) != RunnerKeys().end()) {
      line += " (it belongs in [runner])";
    }
    line += "; it is ignored";
    warnings_.push_back({{key.source().begin.line, key.source().begin.column}, std::move(line)});
  }
}

Status ConfigParser::GetString(const toml::table& t, const toml::table* where, std::string_view key,
                               const std::string& path, bool required,
                               std::optional<std::string>& out) const {
  const toml::node* n = t.get(key);
  if (n == nullptr) return required ? Missing(where, path) : Status::Ok();
  if (!n->is_string()) return WrongType(*n, path, "a string");
  out = n->as_string()->get();
  return Status::Ok();
}

Status ConfigParser::GetInteger(const toml::table& t, const toml::table* where,
                                std::string_view key, const std::string& path,
                                std::int64_t& out) const {
  const toml::node* n = t.get(key);
  if (n == nullptr) return Missing(where, path);
  if (!n->is_integer()) return WrongType(*n, path, "an integer");
  out = n->as_integer()->get();
  return Status::Ok();
}

Status ConfigParser::GetTable(const toml::node& n, const std::string& path,
                              const toml::table*& out) const {
  if (!n.is_table()) return WrongType(n, path, "a table");
  out = n.as_table();
  return Status::Ok();
}

Status ConfigParser::GetTables(const toml::table& root, std::string_view key,
                               std::vector<const toml::table*>& out) const {
  const toml::node* n = root.get(key);
  if (n == nullptr) return Status::Ok();
  if (!n->is_array()) return WrongType(*n, std::string(key), "an array of tables");
  const toml::array& array = *n->as_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    const toml::table* t = nullptr;
    CARTON_RETURN_IF_ERROR(GetTable(array[i], std::string(key) + "[" + std::to_string(i) + "]", t));
    out.push_back(t);
  }
  return Status::Ok();
}

Status ConfigParser::ParseShape(const toml::node& n, const std::string& path, Shape& out) const {
  if (n.is_string()) {
    const std::string& s = n.as_string()->get();
    out = s == "*" ? Shape(AnyDim{}) : Shape(SymbolDim{s});
    return Status::Ok();
  }
  if (!n.is_array()) return WrongType(n, path, "a string or an array");
  const toml::array& array = *n.as_array();
  std::vector<Dimension> dims(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    const toml::node& d = array[i];
    std::string dim_path = path + "[" + std::to_string(i) + "]";
    if (d.is_string()) {
      const std::string& s = d.as_string()->get();
      if (s == "*") {
        dims[i] = AnyDim{};
      } else {
        dims[i] = SymbolDim{s};
      }
    } else if (d.is_integer()) {
      std::int64_t size = d.as_integer()->get();
      if (size < 0) {
        return Fail(&d, dim_path, "must not be negative (got " + std::to_string(size) + ")");
      }
      dims[i] = static_cast<std::uint64_t>(size);
    } else {
      return WrongType(d, dim_path, "an integer or a string");
    }
  }
  out = std::move(dims);
  return Status::Ok();
}

Status ConfigParser::ParseTensor(const toml::table& t, const std::string& path,
                                 TensorSpec& out) const {
  std::optional<std::string> name;
  CARTON_RETURN_IF_ERROR(GetString(t, &t, "name", path + ".name", true, name));
  out.name = std::move(*name);

  std::optional<std::string> dtype;
  CARTON_RETURN_IF_ERROR(GetString(t, &t, "dtype", path + ".dtype", true, dtype));
  std::optional<DataType> parsed = ParseDataType(*dtype);
  if (!parsed) {
    std::string valid;
    for (DataType d : AllDataTypes())
      valid += (valid.empty() ? "" : ", ") + std::string(DataTypeName(d));
    return Fail(t.get("dtype"), path + ".dtype",
                "is not a known dtype (got " + QuoteForMessage(*dtype) + "; valid: " + valid + ")");
  }
  out.dtype = *parsed;

  const toml::node* shape = t.get("shape");
  if (shape == nullptr) return Missing(&t, path + ".shape");
  CARTON_RETURN_IF_ERROR(ParseShape(*shape, path + ".shape", out.shape));

  CARTON_RETURN_IF_ERROR(
      GetString(t, &t, "description", path + ".description", false, out.description));
  return GetString(t, &t, "internal_name", path + ".internal_name", false, out.internal_name);
}

Status ConfigParser::ParseRefs(const toml::table& t, std::string_view key, const std::string& path,
                               std::string (*check)(std::string_view), bool required,
                               std::optional<TensorRefs>& out) const {
  const toml::node* n = t.get(key);
  if (n == nullptr) return required ? Missing(&t, path) : Status::Ok();
  const toml::table* refs = nullptr;
  CARTON_RETURN_IF_ERROR(GetTable(*n, path, refs));
  TensorRefs result;
  for (auto&& [name, value] : *refs) {
    std::string ref_path = path + "." + KeyForPath(name.str());
    if (!value.is_string()) return WrongType(value, ref_path, "a string");
    const std::string& ref = value.as_string()->get();
    CARTON_RETURN_IF_ERROR(Check(value, ref_path, check(ref)));
    result.emplace(std::string(name.str()), ref);
  }
  out = std::move(result);
  return Status::Ok();
}

Status ConfigParser::ParsePlatforms(const toml::table& root, std::vector<std::string>& out) const {
  const toml::node* n = root.get("required_platforms");
  if (n == nullptr) return Status::Ok();
  if (!n->is_array()) return WrongType(*n, "required_platforms", "an array of strings");
  const toml::array& array = *n->as_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    std::string path = "required_platforms[" + std::to_string(i) + "]";
    if (!array[i].is_string()) return WrongType(array[i], path, "a string");
    const std::string& triple = array[i].as_string()->get();
    CARTON_RETURN_IF_ERROR(Check(array[i], path, CheckPlatform(triple)));
    out.push_back(triple);
  }
  return Status::Ok();
}

Status ConfigParser::ParseOpts(const toml::table& runner,
                               std::map<std::string, RunnerOpt>& out) const {
  const toml::node* n = runner.get("opts");
  if (n == nullptr) return Status::Ok();
  const toml::table* opts = nullptr;
  CARTON_RETURN_IF_ERROR(GetTable(*n, "runner.opts", opts));
  for (auto&& [key, value] : *opts) {
    std::string name(key.str());
    if (value.is_integer()) {
      out.emplace(name, value.as_integer()->get());
    } else if (value.is_floating_point()) {
      out.emplace(name, value.as_floating_point()->get());
    } else if (value.is_string()) {
      out.emplace(name, value.as_string()->get());
    } else if (value.is_boolean()) {
      out.emplace(name, value.as_boolean()->get());
    } else {
      return WrongType(value, "runner.opts." + KeyForPath(name),
                       "an integer, a float, a string or a boolean");
    }
  }
  return Status::Ok();
}

Status ConfigParser::ParseRunner(const toml::table& root, RunnerInfo& out) const {
  const toml::node* n = root.get("runner");
  if (n == nullptr) return Corrupt(std::string(source_) + ": [runner] table is missing");
  const toml::table* runner = nullptr;
  CARTON_RETURN_IF_ERROR(GetTable(*n, "runner", runner));

  std::optional<std::string> name;
  CARTON_RETURN_IF_ERROR(
      GetString(*runner, runner, "runner_name", "runner.runner_name", true, name));
  CARTON_RETURN_IF_ERROR(
      Check(*runner->get("runner_name"), "runner.runner_name", CheckRunnerName(*name)));
  out.runner_name = std::move(*name);

  std::optional<std::string> req;
  CARTON_RETURN_IF_ERROR(GetString(*runner, runner, "required_framework_version",
                                   "runner.required_framework_version", true, req));
  CARTON_RETURN_IF_ERROR(Check(*runner->get("required_framework_version"),
                               "runner.required_framework_version", CheckFrameworkVersion(*req)));
  out.required_framework_version = std::move(*req);

  WarnUnknownKeys(*runner, "[runner]", RunnerKeys());
  // Optional: the spec requires only the two fields above.
  std::int64_t compat = static_cast<std::int64_t>(kDefaultRunnerCompatVersion);
  if (runner->get("runner_compat_version") != nullptr) {
    CARTON_RETURN_IF_ERROR(GetInteger(*runner, runner, "runner_compat_version",
                                      "runner.runner_compat_version", compat));
  }
  if (compat < 0) {
    return Fail(runner->get("runner_compat_version"), "runner.runner_compat_version",
                "must not be negative (got " + std::to_string(compat) + ")");
  }
  out.runner_compat_version = static_cast<std::uint64_t>(compat);

  return ParseOpts(*runner, out.opts);
}

Status ConfigParser::ParseSpecVersion(const toml::table& root, std::int64_t& out) const {
  CARTON_RETURN_IF_ERROR(GetInteger(root, nullptr, "spec_version", "spec_version", out));
  if (std::string e = CheckSpecVersion(out); !e.empty()) {
    return Unsupported(Where(root.get("spec_version")) + ": " + e);
  }
  return Status::Ok();
}

Status ConfigParser::ParseStringFields(const toml::table& root, CartonConfig& out) const {
  struct OptionalField {
    std::string_view key;
    std::optional<std::string>* out;
  };
  const OptionalField fields[] = {
      {"model_name", &out.model_name},
      {"short_description", &out.short_description},
      {"model_description", &out.model_description},
      {"license", &out.license},
      {"repository", &out.repository},
      {"homepage", &out.homepage},
  };
  for (const OptionalField& f : fields) {
    CARTON_RETURN_IF_ERROR(GetString(root, nullptr, f.key, std::string(f.key), false, *f.out));
  }
  return Status::Ok();
}

Status ConfigParser::ParseTensors(const toml::table& root, CartonConfig& out) const {
  const std::pair<std::string_view, std::vector<TensorSpec>*> tensor_lists[] = {
      {"input", &out.inputs}, {"output", &out.outputs}};
  for (const auto& [key, list] : tensor_lists) {
    std::vector<const toml::table*> tables;
    CARTON_RETURN_IF_ERROR(GetTables(root, key, tables));
    for (std::size_t i = 0; i < tables.size(); ++i) {
      WarnUnknownKeys(*tables[i], "[[" + std::string(key) + "]] " + std::to_string(i + 1),
                      {"name", "dtype", "shape", "description", "internal_name"});
      TensorSpec spec;
      CARTON_RETURN_IF_ERROR(
          ParseTensor(*tables[i], std::string(key) + "[" + std::to_string(i) + "]", spec));
      list->push_back(std::move(spec));
    }
  }
  return Status::Ok();
}

Status ConfigParser::ParseSelfTests(const toml::table& root, std::vector<SelfTest>& out) const {
  std::vector<const toml::table*> tables;
  CARTON_RETURN_IF_ERROR(GetTables(root, "self_test", tables));
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const toml::table& t = *tables[i];
    std::string path = "self_test[" + std::to_string(i) + "]";
    WarnUnknownKeys(t, "[[self_test]] " + std::to_string(i + 1),
                    {"name", "description", "inputs", "expected_out"});
    if (details_ != nullptr) details_->self_tests.push_back(PositionOf(t));
    SelfTest test;
    CARTON_RETURN_IF_ERROR(GetString(t, &t, "name", path + ".name", false, test.name));
    CARTON_RETURN_IF_ERROR(
        GetString(t, &t, "description", path + ".description", false, test.description));
    std::optional<TensorRefs> inputs;
    CARTON_RETURN_IF_ERROR(
        ParseRefs(t, "inputs", path + ".inputs", CheckSelfTestRef, true, inputs));
    test.inputs = std::move(*inputs);
    CARTON_RETURN_IF_ERROR(ParseRefs(t, "expected_out", path + ".expected_out", CheckSelfTestRef,
                                     false, test.expected_out));
    out.push_back(std::move(test));
  }
  return Status::Ok();
}

Status ConfigParser::ParseExamples(const toml::table& root, std::vector<Example>& out) const {
  std::vector<const toml::table*> tables;
  CARTON_RETURN_IF_ERROR(GetTables(root, "example", tables));
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const toml::table& t = *tables[i];
    std::string path = "example[" + std::to_string(i) + "]";
    WarnUnknownKeys(t, "[[example]] " + std::to_string(i + 1),
                    {"name", "description", "inputs", "sample_out"});
    if (details_ != nullptr) details_->examples.push_back(PositionOf(t));
    Example example;
    CARTON_RETURN_IF_ERROR(GetString(t, &t, "name", path + ".name", false, example.name));
    CARTON_RETURN_IF_ERROR(
        GetString(t, &t, "description", path + ".description", false, example.description));
    std::optional<TensorRefs> refs;
    CARTON_RETURN_IF_ERROR(ParseRefs(t, "inputs", path + ".inputs", CheckExampleRef, true, refs));
    example.inputs = std::move(*refs);
    CARTON_RETURN_IF_ERROR(
        ParseRefs(t, "sample_out", path + ".sample_out", CheckExampleRef, true, refs));
    example.sample_out = std::move(*refs);
    out.push_back(std::move(example));
  }
  return Status::Ok();
}

Result<CartonConfig> ConfigParser::Parse(const toml::table& root) {
  CartonConfig config;
  // The version comes first: a newer spec may change any other field.
  CARTON_RETURN_IF_ERROR(ParseSpecVersion(root, config.spec_version));
  CARTON_RETURN_IF_ERROR(ParseStringFields(root, config));
  CARTON_RETURN_IF_ERROR(ParsePlatforms(root, config.required_platforms));
  CARTON_RETURN_IF_ERROR(ParseTensors(root, config));
  CARTON_RETURN_IF_ERROR(ParseSelfTests(root, config.self_tests));
  CARTON_RETURN_IF_ERROR(ParseExamples(root, config.examples));
  CARTON_RETURN_IF_ERROR(ParseRunner(root, config.runner));
  WarnUnknownKeys(root, "",
                  {"spec_version", "model_name", "short_description", "model_description",
                   "license", "repository", "homepage", "required_platforms", "input", "output",
                   "self_test", "example", "runner"});

  // Every rule has been checked above with a position; this only guards
  // against the two walks drifting apart.
  if (Status s = ValidateConfig(config); !s.ok()) {
    return Status(s.code() == StatusCode::kUnsupported ? s.code() : StatusCode::kCorrupt,
                  std::string(source_) + ": " + s.message());
  }
  return config;
}

}  // namespace

Result<CartonConfig> ParseConfig(std::string_view toml_text, std::string_view source_name,
                                 const ConfigLimits& limits, ConfigParseDetails* details) {
  if (toml_text.size() > limits.max_size) {
    return Corrupt(std::string(source_name) + ": " + std::to_string(toml_text.size()) +
                   " bytes is over the limit of " + std::to_string(limits.max_size));
  }
  // toml++ recurses once per dotted-key part; refuse hostile depth first.
  CARTON_RETURN_IF_ERROR(format_internal::CheckKeyDepth(toml_text, source_name));
  try {
    toml::table root = toml::parse(toml_text, source_name);
    ConfigParseDetails scratch;
    ConfigParser parser(source_name, details != nullptr ? &scratch : nullptr);
    auto config = parser.Parse(root);
    parser.FinishWarnings();
    if (config.ok() && details != nullptr) *details = std::move(scratch);
    return config;
  } catch (const toml::parse_error& e) {
    const toml::source_position& at = e.source().begin;
    return Corrupt(std::string(source_name) + ":" + std::to_string(at.line) + ":" +
                   std::to_string(at.column) + ": invalid TOML: " + std::string(e.description()));
  } catch (const std::exception& e) {
    return Internal(std::string(source_name) + ": unexpected error while parsing: " + e.what());
  }
}

}  // namespace carton
