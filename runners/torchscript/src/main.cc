// carton-runner-torchscript: the TorchScript runner behind the standard
// runner command line (carton/runner/runner.h).
#include "carton/runner/runner.h"
#include "carton/torchscript/torchscript_runner.h"

int main(int argc, char** argv) {
  auto runner = carton::torchscript::MakeTorchScriptRunner();
  return carton::runner::RunnerMain(argc, argv, *runner);
}
