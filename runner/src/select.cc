#include "carton/runner/select.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "carton/format/semver.h"
#include "carton/runner/runner.h"
#include "subprocess.h"

namespace carton::runner {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kPrefix = "carton-runner-";

std::string Describe(const RunnerInfo& r) {
  return "\"" + r.runner_name + "\" (framework " + r.required_framework_version + ", compat " +
         std::to_string(r.runner_compat_version) + ")";
}

void AskInfo(RunnerCandidate* c, std::chrono::milliseconds timeout) {
  auto out = internal::RunCommand({c->path, "info"}, timeout, 64 * 1024);
  if (!out.ok()) {
    c->rejected = "`info` failed: " + out.status().message();
    return;
  }
  if (out->status != 0) {
    c->rejected = "`info` ended with " + internal::DescribeWaitStatus(out->status) +
                  (out->err.empty() ? "" : ": " + out->err);
    return;
  }
  try {
    auto j = nlohmann::json::parse(out->out);
    c->runner_name = j.at("runner_name").get<std::string>();
    c->framework_version = j.at("framework_version").get<std::string>();
    if (!j.at("runner_compat_version").is_number_unsigned()) throw std::invalid_argument("compat");
    c->runner_compat_version = j.at("runner_compat_version").get<std::uint64_t>();
  } catch (const std::exception&) {
    c->rejected = "`info` printed no valid runner description";
  }
}

}  // namespace

std::vector<std::string> RunnerSearchPath() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("CARTON_RUNNER_PATH")) {
    std::string s = env;
    std::size_t start = 0;
    while (start <= s.size()) {
      std::size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((exe.parent_path().parent_path() / "libexec/carton/runners").string());
  dirs.push_back(CARTON_RUNNER_INSTALL_DIR);
  return dirs;
}

namespace {

// The carton-runner-* executables in `dir`. A directory that is missing or
// cannot be read (also part way through) gives what was read of it: the
// search goes on with the next one. Never throws: the iterator is advanced
// with increment(ec), which reports instead of throwing.
std::vector<fs::path> RunnerFiles(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || ::access(path.c_str(), X_OK) != 0) continue;
    files.push_back(path);
  }
  return files;
}

}  // namespace

std::vector<RunnerCandidate> FindRunners(std::chrono::milliseconds info_timeout) {
  std::vector<RunnerCandidate> out;
  std::set<std::string> seen;
  for (const auto& dir : RunnerSearchPath()) {
    std::vector<fs::path> files = RunnerFiles(dir);
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      // The first directory that has a name wins, like $PATH.
      if (!seen.insert(f.filename().string()).second) continue;
      RunnerCandidate c;
      c.path = f.string();
      AskInfo(&c, info_timeout);
      out.push_back(std::move(c));
    }
  }
  return out;
}

Result<RunnerCandidate> SelectRunner(const RunnerInfo& wanted,
                                     std::chrono::milliseconds info_timeout) {
  auto req = VersionReq::Parse(wanted.required_framework_version);
  if (!req.ok()) return InvalidArgument("required_framework_version: " + req.status().message());
  auto found = FindRunners(info_timeout);
  for (auto& c : found) {
    if (!c.rejected.empty()) continue;
    if (c.runner_name != wanted.runner_name) {
      c.rejected = "runner name \"" + c.runner_name + "\", not \"" + wanted.runner_name + "\"";
      continue;
    }
    auto v = ParseVersion(c.framework_version);
    if (!v.ok()) {
      c.rejected = "framework version \"" + c.framework_version + "\" is not a semver version";
      continue;
    }
    if (!req->Matches(*v)) {
      c.rejected = "framework version " + c.framework_version + " does not satisfy " +
                   wanted.required_framework_version;
      continue;
    }
    if (c.runner_compat_version != wanted.runner_compat_version) {
      c.rejected = "runner_compat_version " + std::to_string(c.runner_compat_version) + ", not " +
                   std::to_string(wanted.runner_compat_version);
      continue;
    }
    return c;
  }
  std::string msg = "no runner for " + Describe(wanted);
  if (found.empty()) {
    msg += ": no carton-runner-* executables in";
    for (const auto& d : RunnerSearchPath()) msg += " " + d;
    msg += " (set CARTON_RUNNER_PATH)";
  } else {
    msg += "; found:";
    for (const auto& c : found) msg += "\n  " + c.path + ": " + c.rejected;
  }
  return NotFound(msg);
}

}  // namespace carton::runner
