// Finding runner executables and picking the one a carton needs.
//
// A runner is an executable named `carton-runner-<name>` in a directory of
// $CARTON_RUNNER_PATH (colon-separated), else in `<prefix>/libexec/carton/
// runners` beside the running program or in the install prefix. Each
// candidate is asked `info` (with a timeout) for its name, framework version
// and compat version. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/format/config.h"

namespace carton::runner {

struct RunnerCandidate {
  std::string path;
  std::string runner_name;  // as reported by `info`
  std::string framework_version;
  std::uint64_t runner_compat_version = 0;
  // Why it cannot be used for the request ("" when it can, or when only
  // listed); includes failures to answer `info`.
  std::string rejected;
};

// Directories searched, in order.
std::vector<std::string> RunnerSearchPath();

// Every runner executable found, each asked `info` (failures are recorded
// in `rejected`). Never fails; an empty list means none was found.
std::vector<RunnerCandidate> FindRunners(
    std::chrono::milliseconds info_timeout = std::chrono::seconds(10));

// The first runner whose name equals runner.runner_name, whose framework
// version satisfies runner.required_framework_version and whose compat
// version equals runner.runner_compat_version.
// Errors: kNotFound listing every runner found and why each was rejected
// (or the directories searched when there is none); kInvalidArgument for a
// bad requirement.
Result<RunnerCandidate> SelectRunner(
    const RunnerInfo& runner, std::chrono::milliseconds info_timeout = std::chrono::seconds(10));

}  // namespace carton::runner
