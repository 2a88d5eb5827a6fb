// carton-runner-python: the Python runner behind the standard runner
// command line (carton/runner/runner.h).
#include "carton/python_runner/python_runner.h"
#include "carton/runner/runner.h"

int main(int argc, char** argv) {
  auto runner = carton::python_runner::MakePythonRunner();
  return carton::runner::RunnerMain(argc, argv, *runner);
}
