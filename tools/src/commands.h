// The CLI's commands as plain functions, so main.cc stays a thin parser.
// Each returns the process exit code (see exit_code.h) and writes requested
// output to stdout, errors to stderr.
#pragma once

#include <string>
#include <vector>

namespace carton::cli {

struct SafetensorsInspectArgs {
  std::string file;
  bool json = false;
};
int SafetensorsInspect(const SafetensorsInspectArgs& args);

struct SafetensorsVerifyArgs {
  std::vector<std::string> files;
  bool json = false;
  bool quiet = false;
};
int SafetensorsVerify(const SafetensorsVerifyArgs& args);

}  // namespace carton::cli
