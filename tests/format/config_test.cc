#include "carton/format/config.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>

using namespace carton;

namespace {

// The example carton.toml from the v1 spec, comments included.
constexpr char kSpecExample[] =
    R"toml(# A number defining the carton spec version. This is currently 1
spec_version = 1

# Optional, but highly recommended
# The name of the model
model_name = "super_awesome_test_model"

# Optional
short_description = "A short description that should be less than or equal to 100 characters."

# Optional
model_description = """
Some description of the model that can be as detailed as you want it to be

This can span multiple lines. It can use markdown, but shouldn't use arbitrary HTML
(which will usually be treated as text instead of HTML when this is rendered)

You can use images and links, but the paths must either be complete https
URLs (e.g. https://example.com/image.png) or must reference a file in the misc folder (e.g `@misc/file.png`).
See the misc section of this document for more details
"""

# Optional
license = "Apache-2.0"

# Optional
repository = "https://github.com/VivekPanyam/carton"

# Optional
homepage = "https://carton.run"

# Optional
required_platforms = []

[[input]]
# A string
name = "x"
dtype = "float32"
shape = ["batch_size", 3, 512, 512]
# Optional description of the input
description = "Something"
internal_name = "some_namespace/in_x:0"

# Another input
[[input]]
name = "y"
dtype = "float32"
shape = ["batch_size", 10]

# Same structure as inputs
[[output]]
name = "out"
shape = ["batch_size", 128]
dtype = "float32"

[[self_test]]
# Optional
name = ""
# Optional
description = ""
# Required if this section is specified
inputs = { x = "@tensor_data/self_test_tensor_0", y = "@tensor_data/sometensor"}
# Optional
expected_out = { out = "@tensor_data/another_tensor"}

[[example]]
# Optional
name = ""
# Optional
description = ""
# These can reference things in the `tensor_data` or `misc`
inputs = { x = "@misc/input.png", y = "@tensor_data/something" }
sample_out = { out = "@misc/..." }

[runner]
# A string with the name of the runner required to run this model
runner_name = "torchscript"
required_framework_version = "=1.12.1"
runner_compat_version = 2

[runner.opts]
num_interop_threads = 4
num_threads = 1
)toml";

// Line numbers matter to the rejection tests below.
constexpr char kMinimal[] =
    "spec_version = 1\n"                          // line 1
    "[runner]\n"                                  // line 2
    "runner_name = \"torchscript\"\n"             // line 3
    "required_framework_version = \"=1.12.1\"\n"  // line 4
    "runner_compat_version = 2\n";                // line 5

// kMinimal with `from` replaced by `to` (which must occur once).
std::string Edit(std::string_view from, std::string_view to, std::string base = kMinimal) {
  std::size_t at = base.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(base.find(from, at + 1) == std::string::npos);
  return base.replace(at, from.size(), to);
}

CartonConfig Parse(const std::string& text) {
  Result<CartonConfig> c = ParseConfig(text);
  INFO(text << "\n" << c.status().ToString());
  REQUIRE(c.ok());
  return *c;
}

void ExpectError(const std::string& text, StatusCode code, const std::string& message) {
  Result<CartonConfig> c = ParseConfig(text);
  INFO(text);
  REQUIRE_FALSE(c.ok());
  INFO(c.status().ToString());
  CHECK(c.status().code() == code);
  CHECK(c.status().message().find(message) != std::string::npos);
}

void ExpectCorrupt(const std::string& text, const std::string& message) {
  ExpectError(text, StatusCode::kCorrupt, message);
}

CartonConfig FullConfig() {
  CartonConfig c;
  c.model_name = "full \"model\"";
  c.short_description = "tabs\tand\\backslashes";
  c.model_description = "line one\n\nline \"\"\"three\"\"\" \\\nü ✓ 🚀\r\nend\n";
  c.license = "MIT OR Apache-2.0";
  c.repository = "https://example.com/repo";
  c.homepage = "";
  c.required_platforms = {"x86_64-unknown-linux-gnu", "aarch64-apple-darwin"};

  TensorSpec x;
  x.name = "x";
  x.dtype = DataType::kUint8;
  x.shape = std::vector<Dimension>{SymbolDim{"batch"}, AnyDim{}, std::uint64_t{0},
                                   std::uint64_t{9223372036854775807u}};
  x.description = "first\ninput";
  x.internal_name = "ns/x:0";
  TensorSpec s;
  s.name = "weird name = \"quoted\"";
  s.dtype = DataType::kString;
  s.shape = std::vector<Dimension>{};  // scalar
  TensorSpec any;
  any.name = "any";
  any.dtype = DataType::kFloat64;
  any.shape = AnyDim{};
  c.inputs = {x, s, any};
  TensorSpec out;
  out.name = "out";
  out.dtype = DataType::kInt64;
  out.shape = SymbolDim{"out_shape"};
  out.description = "";
  c.outputs = {out};

  SelfTest t1;
  t1.name = "";
  t1.description = "";
  t1.inputs = {{"x", "@tensor_data/t0"}, {"weird name = \"quoted\"", "@tensor_data/t1"}};
  t1.expected_out = TensorRefs{{"out", "@tensor_data/t2"}};
  SelfTest t2;
  t2.inputs = {};
  t2.expected_out = TensorRefs{};
  SelfTest t3;
  t3.name = "no expected output";
  t3.inputs = {{"x", "@tensor_data/t0"}};
  c.self_tests = {t1, t2, t3};

  Example e;
  e.name = "cat";
  e.description = "a picture\nof a cat";
  e.inputs = {{"x", "@misc/cat.png"}, {"any", "@tensor_data/t3"}};
  e.sample_out = {{"out", "@misc/answer.txt"}};
  Example e2;
  c.examples = {e, e2};

  c.runner.runner_name = "torchscript";
  c.runner.required_framework_version = ">=1.12, <2";
  c.runner.runner_compat_version = 9223372036854775807u;
  c.runner.opts = {
      {"num_threads", std::int64_t{1}},
      {"min_int", std::numeric_limits<std::int64_t>::min()},
      {"ratio", 0.1},
      {"whole", 2.0},
      {"tiny", 5e-324},
      {"huge", 1.7976931348623157e308},
      {"neg_zero", -0.0},
      {"inf", -std::numeric_limits<double>::infinity()},
      {"mode", std::string("fast\nmode")},
      {"dotted.key", std::string("")},
      {"", true},
      {"off", false},
  };
  return c;
}

}  // namespace

TEST_CASE("carton config: parses the spec's example", "[config]") {
  CartonConfig c = Parse(kSpecExample);
  CHECK(c.spec_version == 1);
  CHECK(c.model_name == "super_awesome_test_model");
  CHECK(c.short_description ==
        "A short description that should be less than or equal to 100 "
        "characters.");
  REQUIRE(c.model_description.has_value());
  CHECK(c.model_description->starts_with("Some description of the model"));
  CHECK(c.model_description->ends_with("for more details\n"));
  CHECK(c.license == "Apache-2.0");
  CHECK(c.repository == "https://github.com/VivekPanyam/carton");
  CHECK(c.homepage == "https://carton.run");
  CHECK(c.required_platforms.empty());

  REQUIRE(c.inputs.size() == 2);
  CHECK(c.inputs[0].name == "x");
  CHECK(c.inputs[0].dtype == DataType::kFloat32);
  CHECK(c.inputs[0].shape == Shape(std::vector<Dimension>{SymbolDim{"batch_size"}, std::uint64_t{3},
                                                          std::uint64_t{512}, std::uint64_t{512}}));
  CHECK(c.inputs[0].description == "Something");
  CHECK(c.inputs[0].internal_name == "some_namespace/in_x:0");
  CHECK(c.inputs[1].name == "y");
  CHECK_FALSE(c.inputs[1].description.has_value());
  CHECK_FALSE(c.inputs[1].internal_name.has_value());
  REQUIRE(c.outputs.size() == 1);
  CHECK(c.outputs[0].name == "out");
  CHECK(c.outputs[0].shape ==
        Shape(std::vector<Dimension>{SymbolDim{"batch_size"}, std::uint64_t{128}}));

  REQUIRE(c.self_tests.size() == 1);
  CHECK(c.self_tests[0].name == "");  // present but empty
  CHECK(c.self_tests[0].description == "");
  CHECK(c.self_tests[0].inputs ==
        TensorRefs{{"x", "@tensor_data/self_test_tensor_0"}, {"y", "@tensor_data/sometensor"}});
  CHECK(c.self_tests[0].expected_out == TensorRefs{{"out", "@tensor_data/another_tensor"}});

  REQUIRE(c.examples.size() == 1);
  CHECK(c.examples[0].name == "");
  CHECK(c.examples[0].inputs ==
        TensorRefs{{"x", "@misc/input.png"}, {"y", "@tensor_data/something"}});
  CHECK(c.examples[0].sample_out == TensorRefs{{"out", "@misc/..."}});

  CHECK(c.runner.runner_name == "torchscript");
  CHECK(c.runner.required_framework_version == "=1.12.1");
  CHECK(c.runner.runner_compat_version == 2);
  CHECK(c.runner.opts == std::map<std::string, RunnerOpt>{{"num_interop_threads", std::int64_t{4}},
                                                          {"num_threads", std::int64_t{1}}});
}

TEST_CASE("carton config: parses the minimal config", "[config]") {
  CartonConfig c = Parse(kMinimal);
  CartonConfig expected;
  expected.runner.runner_name = "torchscript";
  expected.runner.required_framework_version = "=1.12.1";
  expected.runner.runner_compat_version = 2;
  CHECK(c == expected);
}

TEST_CASE("carton config: parses every shape form", "[config]") {
  std::string text = std::string(kMinimal) +
                     "[[input]]\nname = \"a\"\ndtype = \"string\"\nshape = \"*\"\n"
                     "[[input]]\nname = \"b\"\ndtype = \"uint64\"\nshape = \"input_shape\"\n"
                     "[[input]]\nname = \"c\"\ndtype = \"int8\"\nshape = []\n"
                     "[[input]]\nname = \"d\"\ndtype = \"int8\"\nshape = [\"*\", \"n\", 0]\n";
  CartonConfig c = Parse(text);
  REQUIRE(c.inputs.size() == 4);
  CHECK(c.inputs[0].dtype == DataType::kString);
  CHECK(c.inputs[0].shape == Shape(AnyDim{}));
  CHECK(c.inputs[1].shape == Shape(SymbolDim{"input_shape"}));
  CHECK(c.inputs[2].shape == Shape(std::vector<Dimension>{}));
  CHECK(c.inputs[3].shape ==
        Shape(std::vector<Dimension>{AnyDim{}, SymbolDim{"n"}, std::uint64_t{0}}));
}

TEST_CASE("carton config: ignores unknown tables and fields", "[config]") {
  std::string text = "future_field = [1, 2.5, \"x\"]\n" + std::string(kMinimal) +
                     "future_runner_field = { a = 1 }\n"
                     "[runner.opts]\nthreads = 2\n"
                     "[[input]]\nname = \"a\"\ndtype = \"int8\"\nshape = []\nunits = \"cm\"\n"
                     "[[self_test]]\ninputs = {}\ntolerance = 0.1\n"
                     "[future_table]\nx = 1979-05-27T07:32:00Z\n[future_table.sub]\ny = "
                     "true\n";
  CartonConfig c = Parse(text);
  CHECK(c.inputs.size() == 1);
  CHECK(c.self_tests.size() == 1);
  CHECK(c.runner.opts.size() == 1);
}

TEST_CASE("carton config: rejects an unsupported spec_version", "[config]") {
  ExpectError(Edit("spec_version = 1", "spec_version = 2"), StatusCode::kUnsupported,
              "carton.toml:1:16: spec_version 2 is not supported");
  // The version is checked before anything a newer spec might change.
  ExpectError("spec_version = 3\n[runner]\nrunner_compat_version = \"x\"\n",
              StatusCode::kUnsupported, "spec_version 3 is not supported");
}

TEST_CASE("carton config: rejects a missing or mistyped spec_version", "[config]") {
  ExpectCorrupt(Edit("spec_version = 1\n", ""), "carton.toml: spec_version is missing");
  ExpectCorrupt(Edit("spec_version = 1", "spec_version = 1.0"),
                "carton.toml:1:16: spec_version must be an integer (got float)");
  ExpectCorrupt(Edit("spec_version = 1", "spec_version = \"1\""),
                "carton.toml:1:16: spec_version must be an integer (got string)");
}

TEST_CASE("carton config: rejects a missing runner table", "[config]") {
  ExpectCorrupt("spec_version = 1\n", "carton.toml: [runner] table is missing");
  ExpectCorrupt("spec_version = 1\nrunner = 3\n",
                "carton.toml:2:10: runner must be a table (got integer)");
}

TEST_CASE("carton config: rejects a missing runner_name", "[config]") {
  ExpectCorrupt(Edit("runner_name = \"torchscript\"\n", ""),
                "carton.toml:2:1: runner.runner_name is missing");
  ExpectCorrupt(Edit("\"torchscript\"", "\"\""),
                "carton.toml:3:15: runner.runner_name must not be empty");
}

TEST_CASE("carton config: rejects a missing required_framework_version", "[config]") {
  ExpectCorrupt(Edit("required_framework_version = \"=1.12.1\"\n", ""),
                "carton.toml:2:1: runner.required_framework_version is missing");
}

TEST_CASE("carton config: a missing runner_compat_version reads as 1", "[config]") {
  // The spec requires only runner_name and required_framework_version.
  auto c = ParseConfig(Edit("runner_compat_version = 2\n", ""));
  REQUIRE(c.ok());
  CHECK(c->runner.runner_compat_version == 1);
}

TEST_CASE("carton config: rejects a negative runner_compat_version", "[config]") {
  ExpectCorrupt(Edit("runner_compat_version = 2", "runner_compat_version = -1"),
                "carton.toml:5:25: runner.runner_compat_version must not be "
                "negative (got -1)");
}

TEST_CASE("carton config: rejects an invalid version requirement", "[config]") {
  ExpectCorrupt(Edit("\"=1.12.1\"", "\"=>1\""),
                "carton.toml:4:30: runner.required_framework_version is not a "
                "valid version "
                "requirement (\"=>1\"): unexpected character '>' while parsing "
                "major version "
                "number");
  ExpectCorrupt(Edit("\"=1.12.1\"", "\"\""), "carton.toml:4:30: runner.required_framework_version");
  for (const char* ok : {"*", ">=2, <3", "^1.13", "1.2.*", "~1.2"}) {
    Parse(Edit("\"=1.12.1\"", std::string("\"") + ok + "\""));
  }
}

TEST_CASE("carton config: rejects an unknown dtype", "[config]") {
  ExpectCorrupt(
      std::string(kMinimal) + "[[input]]\nname = \"a\"\ndtype = \"float16\"\nshape = []\n",
      "carton.toml:8:9: input[0].dtype is not a known dtype (got \"float16\"; valid: float32, "
      "float64, string, int8, int16, "
      "int32, int64, uint8, uint16, uint32, uint64)");
  ExpectCorrupt(
      std::string(kMinimal) + "[[output]]\nname = \"a\"\ndtype = \"nested\"\nshape = []\n",
      "carton.toml:8:9: output[0].dtype is not a known dtype (got \"nested\"; valid: ");
}

TEST_CASE("carton config: rejects a negative dimension", "[config]") {
  ExpectCorrupt(
      std::string(kMinimal) + "[[input]]\nname = \"a\"\ndtype = \"int8\"\nshape = [\"n\", -1]\n",
      "carton.toml:9:15: input[0].shape[1] must not be negative (got -1)");
}

TEST_CASE("carton config: rejects a self_test reference outside tensor_data", "[config]") {
  ExpectCorrupt(std::string(kMinimal) + "[[self_test]]\ninputs = { x = \"@misc/a.png\" }\n",
                "carton.toml:7:16: self_test[0].inputs.x must be "
                "\"@tensor_data/<name>\" (got "
                "\"@misc/a.png\")");
  ExpectCorrupt(std::string(kMinimal) +
                    "[[self_test]]\ninputs = {}\nexpected_out = { y = "
                    "\"tensor_data/b\" }\n",
                "carton.toml:8:22: self_test[0].expected_out.y must be");
  ExpectCorrupt(std::string(kMinimal) + "[[self_test]]\ninputs = { x = \"@tensor_data/\" }\n",
                "self_test[0].inputs.x must be");
  ExpectCorrupt(std::string(kMinimal) + "[[self_test]]\nname = \"t\"\n",
                "carton.toml:6:1: self_test[0].inputs is missing");
}

TEST_CASE("carton config: rejects an example reference outside tensor_data and misc", "[config]") {
  ExpectCorrupt(std::string(kMinimal) +
                    "[[example]]\ninputs = { x = \"https://example.com/a.png\" "
                    "}\nsample_out = {}\n",
                "carton.toml:7:16: example[0].inputs.x must be "
                "\"@tensor_data/<name>\" or "
                "\"@misc/<path>\" (got \"https://example.com/a.png\")");
  ExpectCorrupt(
      std::string(kMinimal) + "[[example]]\ninputs = {}\nsample_out = { \"o.k\" = \"@misc\" }\n",
      "carton.toml:8:24: example[0].sample_out.\"o.k\" must be");
  ExpectCorrupt(std::string(kMinimal) + "[[example]]\ninputs = {}\n",
                "carton.toml:6:1: example[0].sample_out is missing");
}

TEST_CASE("carton config: rejects required_platforms that are not target triples", "[config]") {
  for (const char* bad :
       {"linux", "x86_64-linux", "X86_64-unknown-linux-gnu", "x86_64--linux-gnu",
        "x86_64-unknown-linux-gnu-extra", "", "x86_64-unknown-linux-", "x86 64-unknown-linux"}) {
    ExpectCorrupt("required_platforms = [\"aarch64-apple-darwin\", \"" + std::string(bad) +
                      "\"]\n" + kMinimal,
                  "carton.toml:1:47: required_platforms[1] must be a target triple");
  }
  CartonConfig c = Parse(
      "required_platforms = [\"x86_64-unknown-linux-gnu\", "
      "\"aarch64-apple-darwin\", "
      "\"wasm32-unknown-unknown\", \"thumbv7em-none-eabihf\", "
      "\"i686-pc-windows-msvc\", "
      "\"armv7-unknown-linux-gnueabihf\", \"x86_64-unknown-linux-gnu_ilp32\", "
      "\"a.b-c-d\"]\n" +
      std::string(kMinimal));
  CHECK(c.required_platforms.size() == 8);
  ExpectCorrupt("required_platforms = \"x86_64-unknown-linux-gnu\"\n" + std::string(kMinimal),
                "carton.toml:1:22: required_platforms must be an array of "
                "strings (got string)");
  ExpectCorrupt("required_platforms = [1]\n" + std::string(kMinimal),
                "carton.toml:1:23: required_platforms[0] must be a string (got integer)");
}

TEST_CASE("carton config: rejects runner opts that are not scalars", "[config]") {
  std::string base = std::string(kMinimal) + "[runner.opts]\nok = 1\n";
  ExpectCorrupt(base + "threads = [1, 2]\n",
                "carton.toml:8:11: runner.opts.threads must be an integer, a "
                "float, a string or a "
                "boolean (got array)");
  ExpectCorrupt(base + "nested = { a = 1 }\n",
                "carton.toml:8:10: runner.opts.nested must be an integer, a "
                "float, a string or a "
                "boolean (got table)");
  ExpectCorrupt(base + "when = 1979-05-27\n", "carton.toml:8:8: runner.opts.when must be");
  ExpectCorrupt(base + "at = 07:32:00\n",
                "runner.opts.at must be an integer, a float, a string "
                "or a boolean (got time)");
  ExpectCorrupt(base + "stamp = 1979-05-27T07:32:00Z\n", "(got date-time)");
  ExpectCorrupt(base + "[runner.opts.sub]\nx = 1\n", "runner.opts.sub must be");
  ExpectCorrupt(Edit("runner_compat_version = 2\n", "runner_compat_version = 2\nopts = 3\n"),
                "carton.toml:6:8: runner.opts must be a table (got integer)");
}

TEST_CASE("carton config: rejects a wrong value type anywhere", "[config]") {
  const std::string tensor = "[[input]]\nname = \"a\"\ndtype = \"int8\"\nshape = []\n";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {Edit("runner_compat_version = 2", "runner_compat_version = 2.0"),
       "carton.toml:5:25: runner.runner_compat_version must be an integer (got "
       "float)"},
      {Edit("runner_compat_version = 2", "runner_compat_version = \"2\""),
       "carton.toml:5:25: runner.runner_compat_version must be an integer (got "
       "string)"},
      {Edit("\"torchscript\"", "3"),
       "carton.toml:3:15: runner.runner_name must be a string (got "
       "integer)"},
      {Edit("\"=1.12.1\"", "1.12"),
       "carton.toml:4:30: runner.required_framework_version must be a string "
       "(got float)"},
      {"model_name = 3\n" + std::string(kMinimal),
       "carton.toml:1:14: model_name must be a string (got integer)"},
      {"homepage = true\n" + std::string(kMinimal),
       "carton.toml:1:12: homepage must be a string (got boolean)"},
      {"license = [\"MIT\"]\n" + std::string(kMinimal),
       "carton.toml:1:11: license must be a string (got array)"},
      {"input = 1\n" + std::string(kMinimal),
       "carton.toml:1:9: input must be an array of tables (got integer)"},
      {"output = [1]\n" + std::string(kMinimal),
       "carton.toml:1:11: output[0] must be a table (got integer)"},
      {std::string(kMinimal) + Edit("name = \"a\"", "name = 1", tensor),
       "carton.toml:7:8: input[0].name must be a string (got integer)"},
      {std::string(kMinimal) + Edit("shape = []", "shape = 2", tensor),
       "carton.toml:9:9: input[0].shape must be a string or an array (got "
       "integer)"},
      {std::string(kMinimal) + Edit("shape = []", "shape = [2.0]", tensor),
       "carton.toml:9:10: input[0].shape[0] must be an integer or a string "
       "(got float)"},
      {std::string(kMinimal) + Edit("shape = []", "shape = [[1]]", tensor),
       "carton.toml:9:10: input[0].shape[0] must be an integer or a string "
       "(got array)"},
      {std::string(kMinimal) + Edit("shape = []\n", "", tensor),
       "carton.toml:6:1: input[0].shape is missing"},
      {std::string(kMinimal) + Edit("dtype = \"int8\"\n", "", tensor),
       "carton.toml:6:1: input[0].dtype is missing"},
      {std::string(kMinimal) + tensor + "description = 1\n",
       "carton.toml:10:15: input[0].description must be a string (got "
       "integer)"},
      {std::string(kMinimal) + tensor + "internal_name = false\n",
       "carton.toml:10:17: input[0].internal_name must be a string (got "
       "boolean)"},
      {std::string(kMinimal) + "[[self_test]]\ninputs = { x = 1 }\n",
       "carton.toml:7:16: self_test[0].inputs.x must be a string (got "
       "integer)"},
      {std::string(kMinimal) + "[[self_test]]\ninputs = [\"@tensor_data/a\"]\n",
       "carton.toml:7:10: self_test[0].inputs must be a table (got array)"},
      {std::string(kMinimal) + "[[self_test]]\ninputs = {}\nname = 1\n",
       "carton.toml:8:8: self_test[0].name must be a string (got integer)"},
      {std::string(kMinimal) + "[[example]]\ninputs = {}\nsample_out = {}\ndescription = 2\n",
       "carton.toml:9:15: example[0].description must be a string (got "
       "integer)"},
  };
  for (const Case& c : cases) ExpectCorrupt(c.text, c.message);
}

TEST_CASE("carton config: rejects malformed TOML with its position", "[config]") {
  ExpectCorrupt(Edit("runner_compat_version = 2", "runner_compat_version = "), "carton.toml:5:");
  ExpectCorrupt(Edit("[runner]", "[runner"), "carton.toml:2:");
  ExpectCorrupt(std::string(kMinimal) + "runner_name = \"again\"\n", "carton.toml:6:");
  Result<CartonConfig> c = ParseConfig("spec_version = = 1\n", "model/carton.toml");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().starts_with("model/carton.toml:1:"));
  CHECK(c.status().message().find("invalid TOML") != std::string::npos);
  ExpectCorrupt(std::string("spec_version = 1\nmodel_name = \"\xff\"\n") + kMinimal,
                "carton.toml:2:");
}

TEST_CASE("carton config: rejects a text over the size limit", "[config]") {
  std::string text = kMinimal;
  text += "# " + std::string(kMaxConfigSize, 'x') + "\n";
  ExpectCorrupt(text, "carton.toml: " + std::to_string(text.size()) +
                          " bytes is over the limit of " + std::to_string(kMaxConfigSize));
}

TEST_CASE("carton config: checks types exactly", "[config]") {
  std::string base = std::string(kMinimal) + "[runner.opts]\n";
  CartonConfig c = Parse(base + "f = 2.0\ni = 2\ns = \"3\"\nb = true\ne = 1e3\n");
  CHECK(std::holds_alternative<double>(c.runner.opts["f"]));
  CHECK(std::get<double>(c.runner.opts["f"]) == 2.0);
  CHECK(std::holds_alternative<std::int64_t>(c.runner.opts["i"]));
  CHECK(std::holds_alternative<std::string>(c.runner.opts["s"]));
  CHECK(std::holds_alternative<bool>(c.runner.opts["b"]));
  CHECK(std::get<double>(c.runner.opts["e"]) == 1000.0);
  // Integers in other bases are still integers.
  c = Parse(Edit("runner_compat_version = 2", "runner_compat_version = 0x10"));
  CHECK(c.runner.runner_compat_version == 16);
  ExpectCorrupt(Edit("runner_compat_version = 2", "runner_compat_version = true"),
                "must be an integer (got boolean)");
}

TEST_CASE("carton config: round-trips every field and opt type", "[config]") {
  CartonConfig c = FullConfig();
  Result<std::string> text = WriteConfig(c);
  REQUIRE(text.ok());
  INFO(*text);
  Result<CartonConfig> back = ParseConfig(*text);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(*back == c);
  CHECK(std::signbit(std::get<double>(back->runner.opts["neg_zero"])));

  // NaN is written and read back, though it never compares equal.
  c.runner.opts = {{"nan", std::numeric_limits<double>::quiet_NaN()}};
  text = WriteConfig(c);
  REQUIRE(text.ok());
  back = ParseConfig(*text);
  REQUIRE(back.ok());
  CHECK(std::isnan(std::get<double>(back->runner.opts["nan"])));

  // The spec example survives a write and re-read.
  CartonConfig spec = Parse(kSpecExample);
  text = WriteConfig(spec);
  REQUIRE(text.ok());
  CHECK(Parse(*text) == spec);
}

TEST_CASE("carton config: writes fields in the spec's order", "[config]") {
  Result<std::string> text = WriteConfig(Parse(kSpecExample));
  REQUIRE(text.ok());
  const char* order[] = {"spec_version = 1",
                         "model_name",
                         "short_description",
                         "model_description = \"\"\"\nSome description",
                         "license",
                         "repository",
                         "homepage",
                         "[[input]]\nname = \"x\"\ndtype = \"float32\"\n"
                         "shape = [\"batch_size\", 3, 512, 512]\ndescription = \"Something\"\n"
                         "internal_name",
                         "[[output]]",
                         "[[self_test]]\nname = \"\"\ndescription = \"\"\n"
                         "inputs = { x = \"@tensor_data/self_test_tensor_0\", y = "
                         "\"@tensor_data/sometensor\" }\nexpected_out = { out = "
                         "\"@tensor_data/another_tensor\" }\n",
                         "[[example]]",
                         "sample_out",
                         "[runner]\nrunner_name = \"torchscript\"\n"
                         "required_framework_version = \"=1.12.1\"\nrunner_compat_version = 2\n",
                         "[runner.opts]\nnum_interop_threads = 4\nnum_threads = 1\n"};
  std::size_t at = 0;
  for (const char* part : order) {
    INFO(*text << "\nlooking for: " << part);
    std::size_t next = text->find(part, at);
    REQUIRE(next != std::string::npos);
    at = next;
  }
  CHECK(text->find("required_platforms") == std::string::npos);  // empty is omitted
}

TEST_CASE("carton config: output is deterministic", "[config]") {
  Result<std::string> a = WriteConfig(FullConfig());
  Result<std::string> b = WriteConfig(FullConfig());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  // Writing what was read gives the same bytes again.
  Result<std::string> c = WriteConfig(Parse(*a));
  REQUIRE(c.ok());
  CHECK(*c == *a);
}

TEST_CASE("carton config: the writer refuses invalid configs", "[config]") {
  auto expect_invalid = [](const CartonConfig& c, StatusCode code, const std::string& message) {
    Status s = ValidateConfig(c);
    INFO(s.ToString());
    CHECK(s.code() == code);
    CHECK(s.message().find(message) != std::string::npos);
    Result<std::string> text = WriteConfig(c);
    REQUIRE_FALSE(text.ok());
    CHECK(text.status().code() == code);
  };
  CHECK(ValidateConfig(FullConfig()).ok());

  CartonConfig c = FullConfig();
  c.spec_version = 2;
  expect_invalid(c, StatusCode::kUnsupported, "spec_version 2 is not supported");
  c = FullConfig();
  c.runner.runner_name = "";
  expect_invalid(c, StatusCode::kInvalidArgument, "runner.runner_name must not be empty");
  c = FullConfig();
  c.runner.required_framework_version = ">=";
  expect_invalid(c, StatusCode::kInvalidArgument,
                 "runner.required_framework_version is not a valid version requirement");
  c = FullConfig();
  c.runner.runner_compat_version = std::uint64_t{1} << 63;
  expect_invalid(c, StatusCode::kInvalidArgument,
                 "runner.runner_compat_version is too large for a TOML integer");
  c = FullConfig();
  c.required_platforms.push_back("Linux");
  expect_invalid(c, StatusCode::kInvalidArgument, "required_platforms[2] must be a target triple");
  c = FullConfig();
  c.inputs[0].shape = std::vector<Dimension>{SymbolDim{"*"}};
  expect_invalid(c, StatusCode::kInvalidArgument, "input[0].shape[0] symbol must not be \"*\"");
  c = FullConfig();
  c.outputs[0].shape = SymbolDim{"*"};
  expect_invalid(c, StatusCode::kInvalidArgument, "output[0].shape symbol must not be \"*\"");
  c = FullConfig();
  c.inputs[1].shape = std::vector<Dimension>{std::uint64_t{1} << 63};
  expect_invalid(c, StatusCode::kInvalidArgument, "input[1].shape[0] is too large");
  c = FullConfig();
  c.self_tests[0].inputs["x"] = "@misc/a.png";
  expect_invalid(c, StatusCode::kInvalidArgument, "self_test[0].inputs.x must be");
  c = FullConfig();
  c.examples[0].sample_out["out"] = "answer.txt";
  expect_invalid(c, StatusCode::kInvalidArgument, "example[0].sample_out.out must be");
  c = FullConfig();
  c.model_name = "bad \xc3\x28 utf-8";
  expect_invalid(c, StatusCode::kInvalidArgument, "model_name is not valid UTF-8");
  c = FullConfig();
  c.runner.opts["s"] = std::string("\xed\xa0\x80");  // a surrogate
  expect_invalid(c, StatusCode::kInvalidArgument, "runner.opts.s is not valid UTF-8");
}

TEST_CASE("carton config: a hostile dotted key is refused before parsing", "[carton][config]") {
  std::string key = "x";
  for (int i = 0; i < 300000; ++i) key += ".x";
  std::string text = "spec_version = 1\n" + key + " = 1\n";
  auto r = carton::ParseConfig(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == carton::StatusCode::kCorrupt);
  CHECK(r.status().message().find("carton.toml:2:") == 0);
  std::string header = "spec_version = 1\n[" + key + "]\n";
  CHECK_FALSE(carton::ParseConfig(header).ok());
}

TEST_CASE("carton config: the commented form reads back as the same config", "[config]") {
  for (const CartonConfig& c : {FullConfig(), Parse(kMinimal)}) {
    Result<std::string> text = WriteConfig(c, /*commented=*/true);
    REQUIRE(text.ok());
    INFO(*text);
    CHECK(text->find("# The runner that runs the model") != std::string::npos);
    Result<CartonConfig> back = ParseConfig(*text);
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(*back == c);
  }
  // Absent optional fields appear commented out.
  Result<std::string> minimal = WriteConfig(Parse(kMinimal), true);
  CHECK(minimal->find("\n# license = \"Apache-2.0\"\n") != std::string::npos);
  // The plain form has no comment.
  CHECK(WriteConfig(FullConfig())->find('#') == std::string::npos);
}

TEST_CASE("carton config: unknown keys are accepted and reported with near misses", "[config]") {
  const std::string text = std::string(kMinimal) +
                           "licence = \"MIT\"\n"  // line 6, inside [runner]
                           "runner_nmae = \"x\"\n"
                           "[[input]]\nname = \"x\"\ndtype = \"float32\"\nshape = [1]\ndtyp = 1\n"
                           "[[self_test]]\ninputs = {}\nexpected = {}\n";
  std::string top = "short_descripton = \"s\"\nmodel_nam = \"m\"\nnext_year = 1\n" + text;
  ConfigParseDetails details;
  Result<CartonConfig> c = ParseConfig(top, "carton.toml", {}, &details);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  std::string all;
  for (const auto& w : details.warnings) all += w + "\n";
  INFO(all);
  REQUIRE(details.warnings.size() == 7);
  // In the order of the text.
  CHECK(details.warnings[0] ==
        "carton.toml:1:1: unknown key \"short_descripton\" (did you mean \"short_description\"?); "
        "it is ignored");
  CHECK(details.warnings[1] ==
        "carton.toml:2:1: unknown key \"model_nam\" (did you mean \"model_name\"?); it is ignored");
  CHECK(details.warnings[2] == "carton.toml:3:1: unknown key \"next_year\"; it is ignored");
  CHECK(details.warnings[3] ==
        "carton.toml:9:1: unknown key \"licence\" in [runner]; it is ignored");
  CHECK(details.warnings[4] ==
        "carton.toml:10:1: unknown key \"runner_nmae\" in [runner] (did you mean "
        "\"runner_name\"?); it is ignored");
  CHECK(details.warnings[5] ==
        "carton.toml:15:1: unknown key \"dtyp\" in [[input]] 1 (did you mean \"dtype\"?); it is "
        "ignored");
  CHECK(details.warnings[6] ==
        "carton.toml:18:1: unknown key \"expected\" in [[self_test]] 1; it is ignored");
  REQUIRE(details.self_tests.size() == 1);
  CHECK(details.self_tests[0].line == 16);
  CHECK(details.self_tests[0].column == 1);

  // A runner key at the top level belongs in [runner].
  details = {};
  REQUIRE(ParseConfig("runner_name = \"x\"\n" + std::string(kMinimal), "carton.toml", {}, &details)
              .ok());
  REQUIRE(details.warnings.size() == 1);
  CHECK(details.warnings[0] ==
        "carton.toml:1:1: unknown key \"runner_name\" (it belongs in [runner]); it is ignored");
  // A known file has none.
  details = {};
  REQUIRE(ParseConfig(kSpecExample, "carton.toml", {}, &details).ok());
  CHECK(details.warnings.empty());
}
