// carton init DIR: a commented carton.toml, from the describing flags or
// guessed from the files in DIR.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/format/config.h"
#include "commands.h"
#include "describe_flags.h"
#include "exit_code.h"
#include "json_out.h"

namespace carton::cli {
namespace {

namespace fs = std::filesystem;

// What the files of `dir` say about the runner: a TorchScript file
// (model.pt, else the only .pt) or Python code (main.py).
struct Guess {
  std::string runner;
  std::string why;
  std::map<std::string, RunnerOpt> opts;
};

Guess GuessRunner(const fs::path& dir) {
  std::error_code ec;
  // Files go under model/ when the folder has no carton layout.
  const fs::path model = fs::is_directory(dir / "model", ec) ? dir / "model" : dir;
  std::vector<std::string> pt;
  bool main_py = false;
  for (const auto& e : fs::directory_iterator(model, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".pt") pt.push_back(name);
    if (name == "main.py") main_py = true;
  }
  std::sort(pt.begin(), pt.end());
  Guess g;
  if (std::find(pt.begin(), pt.end(), "model.pt") != pt.end()) {
    g = {"torchscript", "model.pt", {}};
  } else if (pt.size() == 1) {
    g = {"torchscript", pt[0], {{"model_path", RunnerOpt(pt[0])}}};
  } else if (main_py) {
    g = {"python",
         "main.py",
         {{"entrypoint_package", RunnerOpt(std::string("main"))},
          {"entrypoint_fn", RunnerOpt(std::string("get_model"))}}};
  }
  return g;
}

}  // namespace

int Init(const InitArgs& a) {
  const fs::path dir = a.dir;
  const std::string path = (dir / "carton.toml").string();
  std::error_code ec;
  if (fs::exists(path, ec)) {
    return Fail("init", InvalidArgument(path + " already exists; edit it, or remove it first"));
  }
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    return Fail("init", InvalidArgument(a.dir + ": not a directory"));
  }
  CartonConfig c;
  c.runner.runner_compat_version = kDefaultRunnerCompatVersion;
  c.model_name =
      dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  if (c.model_name->empty() || *c.model_name == "." || *c.model_name == "..") {
    c.model_name = fs::absolute(dir, ec).lexically_normal().filename().string();
  }
  std::vector<std::string> notes;
  if (a.describe.runner.empty()) {
    Guess g = GuessRunner(dir);
    if (g.runner.empty()) {
      c.runner.runner_name = "RUNNER";
      notes.push_back("no model.pt or main.py: set runner_name (carton runners lists them)");
    } else {
      c.runner.runner_name = g.runner;
      c.runner.opts = g.opts;
      notes.push_back("runner " + g.runner + " (from " + g.why + ")");
    }
  }
  if (a.describe.framework_version.empty()) {
    c.runner.required_framework_version = "*";
    notes.push_back("required_framework_version is \"*\" (any): pin the version the model needs");
  }
  Status applied = ApplyDescribeFlags(a.describe, &c);
  if (!applied.ok()) return Fail("init", applied);
  auto text = WriteConfig(c, /*commented=*/true);
  if (!text.ok()) return Fail("init", text.status());
  fs::create_directories(dir, ec);
  if (ec) return Fail("init", IoError(a.dir + ": " + ec.message()));
  Status written = WriteFileAtomically(path, AsBytes(*text));
  if (!written.ok()) return Fail("init", written);
  for (const auto& n : notes) std::cerr << "carton init: note: " << n << '\n';
  if (a.json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["path"] = path;
    j["notes"] = notes;
    PrintJson(j);
  } else if (!a.quiet) {
    std::cerr << "wrote " << path << '\n';
  }
  return kExitOk;
}

}  // namespace carton::cli
