// The `carton` command line: parses arguments with CLI11 and calls the
// command functions in commands.h. The only file that includes CLI11.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "exit_code.h"

int main(int argc, char** argv) {
  using namespace carton::cli;
  CLI::App app{"carton: pack, verify, inspect and load machine-learning models", "carton"};
  app.set_version_flag("--version", "carton 0.1.0");
  app.require_subcommand(1);
  int rc = kExitOk;

  auto* st = app.add_subcommand("safetensors", "Inspect and verify safetensors files");
  st->require_subcommand(1);

  SafetensorsInspectArgs inspect;
  auto* st_inspect = st->add_subcommand("inspect", "List the tensors and metadata of a file");
  st_inspect->add_option("FILE", inspect.file, "A .safetensors file")->required();
  st_inspect->add_flag("--json", inspect.json, "Print JSON");
  st_inspect->callback([&] { rc = SafetensorsInspect(inspect); });

  SafetensorsVerifyArgs verify;
  auto* st_verify = st->add_subcommand(
      "verify", "Check files against every rule of the format (exit 1 if any is invalid)");
  st_verify->add_option("FILE", verify.files, "Files to check")->required();
  st_verify->add_flag("--json", verify.json, "Print a JSON report");
  st_verify->add_flag("-q,--quiet", verify.quiet, "Print only errors");
  st_verify->callback([&] { rc = SafetensorsVerify(verify); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitTrouble;
  }
  return rc;
}
