// carton version: the version CMake's project() sets (CARTON_VERSION).
#include <iostream>

#include "commands.h"
#include "exit_code.h"
#include "json_out.h"

namespace carton::cli {

int Version(bool json) {
  if (json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["version"] = CARTON_VERSION;
    PrintJson(j);
  } else {
    std::cout << "carton " << CARTON_VERSION << '\n';
  }
  return kExitOk;
}

}  // namespace carton::cli
