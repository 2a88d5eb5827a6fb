#include "pack_cmd.h"

#include <filesystem>
#include <iostream>

#include "describe_flags.h"
#include "exit_code.h"

namespace carton::cli {

// The Python runner needs [runner.opts] entrypoint_package and
// entrypoint_fn. Without them, the defaults `carton init` writes for a
// folder with main.py (main, get_model); with neither, an error saying
// which options to give.
Status PythonEntrypointDefaults(const std::string& path, CartonConfig* c) {
  auto& opts = c->runner.opts;
  if (c->runner.runner_name != "python" ||
      (opts.count("entrypoint_package") > 0 && opts.count("entrypoint_fn") > 0)) {
    return Status::Ok();
  }
  std::error_code ec;
  const bool main_py = std::filesystem::is_regular_file(path + "/main.py", ec) ||
                       std::filesystem::is_regular_file(path + "/model/main.py", ec);
  if (!main_py) {
    return InvalidArgument(
        "the python runner imports the model: give --opt entrypoint_package=MODULE and --opt "
        "entrypoint_fn=FUNCTION (the function returning the model), or put main.py with "
        "get_model() in " +
        path);
  }
  opts.emplace("entrypoint_package", RunnerOpt(std::string("main")));
  opts.emplace("entrypoint_fn", RunnerOpt(std::string("get_model")));
  return Status::Ok();
}

// One --self-test value: IN.safetensors, or IN.safetensors:OUT.safetensors
// (split at the last ':' unless the whole value names a file). The
// self-test is named after IN's stem.
Result<PackSelfTest> ReadSelfTestFlag(const std::string& value) {
  namespace fs = std::filesystem;
  std::string in = value, out;
  std::error_code ec;
  const std::size_t colon = value.rfind(':');
  if (colon != std::string::npos && !fs::is_regular_file(value, ec)) {
    in = value.substr(0, colon);
    out = value.substr(colon + 1);
    if (in.empty() || out.empty()) {
      return InvalidArgument("--self-test " + value +
                             ": give IN.safetensors or IN.safetensors:OUT.safetensors");
    }
  }
  PackSelfTest t;
  t.name = fs::path(in).stem().string();
  auto inputs = ReadSafetensorsTensors(in);
  if (!inputs.ok()) return inputs.status().WithContext("--self-test");
  t.inputs = std::move(inputs).value();
  if (!out.empty()) {
    auto expected = ReadSafetensorsTensors(out);
    if (!expected.ok()) return expected.status().WithContext("--self-test");
    t.expected_out = std::move(expected).value();
  }
  return t;
}

Status DescribeForPack(const PackArgs& a, PackDescription* d) {
  d->path = a.dir;
  d->options.exclude = a.exclude;
  // --self-test values without '=' name safetensors files (added to the
  // carton); the others are describing flags like the rest.
  DescribeArgs describe = a.describe;
  describe.self_tests.clear();
  for (const std::string& value : a.describe.self_tests) {
    if (value.find('=') != std::string::npos) {
      describe.self_tests.push_back(value);
      continue;
    }
    CARTON_ASSIGN_OR_RETURN(PackSelfTest t, ReadSelfTestFlag(value));
    d->self_tests.push_back(std::move(t));
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string config_path = a.dir + "/carton.toml";
  const bool has_config = fs::is_directory(a.dir, ec) && fs::is_regular_file(config_path, ec);
  const std::string given = GivenDescribeFlags(describe);
  if (given.empty()) {
    if (a.override_config) {
      return InvalidArgument(
          "--override needs the flags to put over carton.toml (--runner, "
          "--framework-version, --name, ...)");
    }
    return Status::Ok();
  }
  if (!has_config) {
    CARTON_ASSIGN_OR_RETURN(d->config, ConfigFromFlags(describe));
    d->config_use = PackConfigUse::kIfMissing;
    return PythonEntrypointDefaults(a.dir, &*d->config);
  }
  if (!a.override_config) {
    return InvalidArgument(config_path + " describes the model, so " + given +
                           " would be ignored; leave them out, or add --override to put them over "
                           "the file's values");
  }
  // Pack parses carton.toml (its warnings come back in the report) and
  // hands its values to the flags.
  d->edit_config = [describe](CartonConfig* c) { return ApplyDescribeFlags(describe, c); };
  return Status::Ok();
}

void PrintPackNotes(const PackReport& report) {
  for (const auto& w : report.warnings) std::cerr << "carton pack: warning: " << w << '\n';
  if (!report.skipped_by_default.empty()) {
    std::cerr << "carton pack: note: left out";
    for (std::size_t i = 0; i < report.skipped_by_default.size(); ++i) {
      std::cerr << (i == 0 ? " " : ", ") << report.skipped_by_default[i];
    }
    std::cerr << " (.git/, __pycache__/ and .DS_Store are never packed)\n";
  }
}

}  // namespace carton::cli
