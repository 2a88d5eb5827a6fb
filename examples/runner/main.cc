// carton-runner-example: a runner written against the installed carton
// package. It scales every float32 input by the runner option `scale`
// (default 1) and passes other tensors through, showing what a framework
// runner uses: runner opts, the declared inputs, tensor views with dtype
// and shape, string tensors, and owned outputs.
#include <cstdio>
#include <cstring>
#include <variant>

#include "carton/runner/runner.h"

using namespace carton;

namespace {

class ExampleRunner : public runner::Runner {
 public:
  runner::RunnerIdentity Identity() const override { return {"example", "0.1.0", 1}; }

  Status Load(const std::string& model_dir, const runner::LoadContext& context) override {
    for (const auto& [key, value] : context.opts) {
      if (key == "scale" && std::holds_alternative<double>(value)) {
        scale_ = static_cast<float>(std::get<double>(value));
      } else if (key == "scale" && std::holds_alternative<std::int64_t>(value)) {
        scale_ = static_cast<float>(std::get<std::int64_t>(value));
      } else {
        std::fprintf(stderr, "carton-runner-example: ignoring option \"%s\"\n", key.c_str());
      }
    }
    std::fprintf(stderr, "carton-runner-example: model in %s, %zu declared inputs\n",
                 model_dir.c_str(), context.config.inputs.size());
    return Status::Ok();
  }

  Result<std::vector<runner::Tensor>> Infer(const std::vector<runner::Tensor>& inputs) override {
    std::vector<runner::Tensor> out;
    for (const auto& t : inputs) {
      if (t.dtype != DataType::kFloat32) {
        out.push_back(t);  // strings and other types pass through as they are
        continue;
      }
      std::vector<std::byte> bytes(t.data.size());
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        float f;
        std::memcpy(&f, t.data.data() + i, 4);  // little-endian hosts
        f *= scale_;
        std::memcpy(bytes.data() + i, &f, 4);
      }
      out.push_back(runner::Tensor::Owned(t.name, t.dtype, t.shape, std::move(bytes)));
    }
    return out;
  }

 private:
  float scale_ = 1.0f;
};

}  // namespace

int main(int argc, char** argv) {
  ExampleRunner runner;
  return runner::RunnerMain(argc, argv, runner);
}
