#include "exit_code.h"

#include <cstdio>
#include <string>

namespace carton::cli {

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

int Fail(std::string_view command, const Status& status) {
  std::string line = "carton " + std::string(command) + ": " + status.message() + "\n";
  std::fputs(line.c_str(), stderr);
  return ExitCodeFor(status);
}

}  // namespace carton::cli
