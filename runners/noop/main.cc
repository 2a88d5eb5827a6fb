// carton-runner-noop: the reference runner. It loads nothing and returns
// its inputs as its outputs (same names), so a carton whose self-tests
// expect their inputs back passes. Protocol tests run against it.
#include <cstdio>

#include "carton/runner/runner.h"

namespace {

class NoopRunner : public carton::runner::Runner {
 public:
  carton::runner::RunnerIdentity Identity() const override { return {"noop", "1.0.0", 1}; }

  carton::Status Load(const std::string&, const carton::runner::LoadContext& context) override {
    for (const auto& [key, value] : context.opts) {
      std::fprintf(stderr, "carton-runner-noop: ignoring unknown option \"%s\"\n", key.c_str());
    }
    return carton::Status::Ok();
  }

  carton::Result<std::vector<carton::runner::Tensor>> Infer(
      const std::vector<carton::runner::Tensor>& inputs) override {
    return inputs;  // views; they share the inputs' owners
  }
};

}  // namespace

int main(int argc, char** argv) {
  NoopRunner runner;
  return carton::runner::RunnerMain(argc, argv, runner);
}
