#include "exit_code.h"

#include <cstdio>
#include <string>

#include "json_out.h"

namespace carton::cli {
namespace {

bool json_errors = false;

// With --json, the error document on stdout.
void PrintJsonError(const Status& status) {
  if (!json_errors) return;
  Json j = JsonDocument();
  j["ok"] = false;
  j["error"] = ErrorJson(status);
  PrintJson(j);
}

}  // namespace

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kCorrupt:
    case StatusCode::kUnsupported:
      return kExitBadInput;
    case StatusCode::kModelError:
      return kExitModelFailed;
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

int FailEachLine(std::string_view command, const Status& status) {
  std::string text;
  std::string_view message = status.message();
  while (true) {
    const std::size_t nl = message.find('\n');
    text += "carton " + std::string(command) + ": " + std::string(message.substr(0, nl)) + "\n";
    if (nl == std::string_view::npos) break;
    message.remove_prefix(nl + 1);
  }
  std::fputs(text.c_str(), stderr);
  PrintJsonError(status);
  return ExitCodeFor(status);
}

int FailWith(std::string_view command, const Status& status, int exit_code) {
  ReportError(command, status);
  PrintJsonError(status);
  return exit_code;
}

int Fail(std::string_view command, const Status& status) {
  return FailWith(command, status, ExitCodeFor(status));
}

}  // namespace carton::cli
