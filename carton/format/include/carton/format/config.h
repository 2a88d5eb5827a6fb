// carton.toml: the model's metadata, as a plain struct, with a parser for
// untrusted text and a deterministic writer.
//
// The struct holds every field of spec v1; optional fields are
// std::optional (an empty string that is present stays present), lists that
// may be absent are empty vectors, and maps are std::map so iteration and
// output are deterministic. Unknown tables and fields in the text are
// ignored, as the spec requires.
//
// Stricter than the spec's wording (a carton breaking these cannot be used
// anyway): runner_name must be non-empty; runner_compat_version and
// dimensions must not be negative; [[example]] needs `inputs` and
// `sample_out`, [[self_test]] needs `inputs`; references need a non-empty
// path after their prefix; runner opts must be integers, floats, strings or
// booleans.
//
// Thread-safety: plain values and free functions; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "carton/common/status.h"
#include "carton/format/data_type.h"

namespace carton {

// Texts longer than this are rejected before parsing.
inline constexpr std::size_t kMaxConfigSize = std::size_t{1} << 20;
// The only spec_version this library reads and writes.
inline constexpr std::int64_t kConfigSpecVersion = 1;

// The string "*" where a dimension or a whole shape is expected: any value,
// possibly different at each use.
struct AnyDim {
  friend bool operator==(const AnyDim&, const AnyDim&) = default;
};
// A named size that must resolve to the same value wherever it is used.
struct SymbolDim {
  std::string name;  // never "*"
  friend bool operator==(const SymbolDim&, const SymbolDim&) = default;
};
using Dimension = std::variant<std::uint64_t, SymbolDim, AnyDim>;

// shape = "*" (any rank), shape = "name" (a symbol for the whole shape), or
// shape = [dims...] (an empty list is a scalar).
using Shape = std::variant<AnyDim, SymbolDim, std::vector<Dimension>>;

// One [[input]] or [[output]].
struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape = AnyDim{};
  std::optional<std::string> description;
  std::optional<std::string> internal_name;
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

// Tensor name -> reference such as "@tensor_data/x" or "@misc/y.png".
using TensorRefs = std::map<std::string, std::string>;

// One [[self_test]]: references into tensor_data only.
struct SelfTest {
  std::optional<std::string> name;
  std::optional<std::string> description;
  TensorRefs inputs;
  std::optional<TensorRefs> expected_out;
  friend bool operator==(const SelfTest&, const SelfTest&) = default;
};

// One [[example]]: references into tensor_data or misc.
struct Example {
  std::optional<std::string> name;
  std::optional<std::string> description;
  TensorRefs inputs;
  TensorRefs sample_out;
  friend bool operator==(const Example&, const Example&) = default;
};

// A [runner.opts] value. TOML integers, floats, strings and booleans only.
using RunnerOpt = std::variant<std::int64_t, double, std::string, bool>;

struct RunnerInfo {
  std::string runner_name;
  // A version requirement in the Rust semver crate's syntax (see semver.h),
  // kept as written.
  std::string required_framework_version;
  std::uint64_t runner_compat_version = 0;
  std::map<std::string, RunnerOpt> opts;
  friend bool operator==(const RunnerInfo&, const RunnerInfo&) = default;
};

struct CartonConfig {
  std::int64_t spec_version = kConfigSpecVersion;
  std::optional<std::string> model_name;
  std::optional<std::string> short_description;
  std::optional<std::string> model_description;
  std::optional<std::string> license;
  std::optional<std::string> repository;
  std::optional<std::string> homepage;
  std::vector<std::string> required_platforms;  // target triples; empty = all
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<SelfTest> self_tests;
  std::vector<Example> examples;
  RunnerInfo runner;
  friend bool operator==(const CartonConfig&, const CartonConfig&) = default;
};

// The limits ParseConfig applies.
struct ConfigLimits {
  std::size_t max_size = kMaxConfigSize;
};

// A place in carton.toml's text, 1-based; line 0 when unknown.
struct TextPosition {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

// What ParseConfig reports beside the config, when asked.
struct ConfigParseDetails {
  std::vector<TextPosition> self_tests;  // where each [[self_test]] starts
  std::vector<TextPosition> examples;    // where each [[example]] starts
  // One line per key that spec v1 does not define (the spec says to ignore
  // them, and they are): "<source>:3:1: unknown key \"licence\" (did you mean
  // \"license\"?); it is ignored".
  std::vector<std::string> warnings;
};

// Parses carton.toml text. Untrusted input: every value is type-checked
// exactly (2.0 is not an integer, 3 is not a string) and validated.
// `source_name` prefixes every message, followed by line:column when the
// problem has a place: "carton.toml:12:5: runner.runner_compat_version must
// be an integer". A missing runner_compat_version reads as 1 (the spec
// requires only runner_name and required_framework_version).
// Errors: kUnsupported if spec_version is not 1; kCorrupt for anything else
// (bad TOML, a text over kMaxConfigSize, a missing required field, a wrong
// type, an invalid value). `limits` replaces kMaxConfigSize. `details`, when
// given, receives positions and warnings.
Result<CartonConfig> ParseConfig(std::string_view toml_text,
                                 std::string_view source_name = "carton.toml",
                                 const ConfigLimits& limits = {},
                                 ConfigParseDetails* details = nullptr);

// The runner_compat_version of a carton.toml that does not give one.
inline constexpr std::uint64_t kDefaultRunnerCompatVersion = 1;

// Checks the rules ParseConfig enforces on values: spec_version is 1; the
// runner name is non-empty and the framework requirement parses; platforms
// are target triples; self-test references start with "@tensor_data/",
// example references with "@tensor_data/" or "@misc/"; symbols are not "*";
// integers fit a TOML integer; every string is valid UTF-8.
// Errors: kUnsupported for spec_version, kInvalidArgument otherwise; the
// message names the field ("input[1].shape[0]: ...").
Status ValidateConfig(const CartonConfig& config);

// Serializes a config in the spec's field order. Deterministic: the same
// config always gives the same bytes, and ParseConfig of the output gives a
// config equal to the input (floats round-trip exactly; NaN stays NaN).
// Errors: whatever ValidateConfig reports; invalid configs are not written.
// With `commented`, each field gets a one-line comment and absent optional
// fields appear commented out, for people to edit (carton init); the values
// are the same.
Result<std::string> WriteConfig(const CartonConfig& config, bool commented = false);

}  // namespace carton
