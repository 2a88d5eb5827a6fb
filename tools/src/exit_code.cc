#include "exit_code.h"

#include <cstdio>
#include <string>

#include "json_out.h"

namespace carton::cli {
namespace {
bool json_errors = false;
}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kCorrupt:
    case StatusCode::kUnsupported:
      return kExitBadInput;
    default:
      return kExitTrouble;
  }
}

void SetJsonErrors(bool json) { json_errors = json; }
bool JsonErrors() { return json_errors; }

int ReportError(std::string_view command, const Status& status) {
  std::string line = "carton " + std::string(command) + ": " + status.message() + "\n";
  std::fputs(line.c_str(), stderr);
  return ExitCodeFor(status);
}

int FailWith(std::string_view command, const Status& status, int exit_code) {
  ReportError(command, status);
  if (json_errors) {
    Json j = JsonDocument();
    j["ok"] = false;
    j["error"] = ErrorJson(status);
    PrintJson(j);
  }
  return exit_code;
}

int Fail(std::string_view command, const Status& status) {
  return FailWith(command, status, ExitCodeFor(status));
}

}  // namespace carton::cli
