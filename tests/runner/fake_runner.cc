// A misbehaving runner for tests, built on the SDK. Its identity and
// behaviour come from the environment:
//   FAKE_RUNNER_NAME (noop), FAKE_RUNNER_VERSION (1.0.0), FAKE_RUNNER_COMPAT (1)
//   FAKE_RUNNER_MODE: echo | crash | hang | wrong-value | wrong-shape |
//                     wrong-dtype | missing-output | fail-load | bad-info
//   FAKE_RUNNER_STDERR=1: writes "loading the model" to stderr in Load and
//                     "inferring <n>" at the start of the n-th Infer
//   FAKE_RUNNER_STDOUT=1: writes "printed on stdout" to stdout in Load
//   FAKE_RUNNER_CRASH_AT=N: aborts in the N-th Infer (the earlier ones echo)
//   FAKE_RUNNER_DEVICE=1: writes in Load, on stderr, the device it was given
//                     and its CUDA_VISIBLE_DEVICES:
//                     "device=<name> requested=<0|1> CUDA_VISIBLE_DEVICES=<value|(unset)>"
//   FAKE_RUNNER_DEVICE_LOG=FILE: appends that line to FILE as well
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "carton/runner/runner.h"

using namespace carton;

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

class FakeRunner : public runner::Runner {
 public:
  runner::RunnerIdentity Identity() const override {
    return {Env("FAKE_RUNNER_NAME", "noop"), Env("FAKE_RUNNER_VERSION", "1.0.0"),
            std::strtoull(Env("FAKE_RUNNER_COMPAT", "1").c_str(), nullptr, 10)};
  }
  Status Load(const std::string& model_dir, const runner::LoadContext& context) override {
    if (chatty_) std::fputs("loading the model\n", stderr);
    ReportDevice(context.device);
    if (runner::RunnerDevice().Name() != context.device.Name() ||
        runner::RunnerDevice().requested != context.device.requested) {
      return Internal("RunnerDevice() is " + runner::RunnerDevice().Name() +
                      ", LoadContext::device " + context.device.Name());
    }
    if (Env("FAKE_RUNNER_STDOUT", "") == "1") {
      std::fputs("printed on stdout\n", stdout);
      std::fflush(stdout);
    }
    if (mode_ == "fail-load") return Corrupt(model_dir + ": cannot parse the model");
    return Status::Ok();
  }
  Result<std::vector<runner::Tensor>> Infer(const std::vector<runner::Tensor>& inputs) override {
    if (chatty_) std::fprintf(stderr, "inferring %d\n", ++calls_);
    ++infers_;
    if (mode_ == "crash" || infers_ == crash_at_) std::abort();
    if (mode_ == "hang") {
      for (;;) ::pause();
    }
    std::vector<runner::Tensor> out = inputs;
    for (auto& t : out) {
      if (t.dtype != DataType::kFloat32) continue;
      if (mode_ == "wrong-value") {
        std::vector<std::byte> bytes(t.data.begin(), t.data.end());
        float f;
        std::memcpy(&f, bytes.data(), 4);
        f += 1.0f;
        std::memcpy(bytes.data(), &f, 4);
        t = runner::Tensor::Owned(t.name, t.dtype, t.shape, std::move(bytes));
      } else if (mode_ == "wrong-shape") {
        t.shape = {2, t.shape.empty() ? 1 : t.shape[0] / 2};
      } else if (mode_ == "wrong-dtype") {
        t.dtype = DataType::kInt32;
      }
    }
    if (mode_ == "missing-output" && !out.empty()) out.erase(out.begin());
    return out;
  }

 private:
  static void ReportDevice(const loader::Device& device) {
    const std::string log = Env("FAKE_RUNNER_DEVICE_LOG", "");
    if (Env("FAKE_RUNNER_DEVICE", "") != "1" && log.empty()) return;
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string line = "device=" + device.Name() +
                             " requested=" + (device.requested ? "1" : "0") +
                             " CUDA_VISIBLE_DEVICES=" + (visible ? visible : "(unset)") + "\n";
    if (Env("FAKE_RUNNER_DEVICE", "") == "1") std::fputs(line.c_str(), stderr);
    if (log.empty()) return;
    if (std::FILE* f = std::fopen(log.c_str(), "a")) {
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }

  std::string mode_ = Env("FAKE_RUNNER_MODE", "echo");
  bool chatty_ = Env("FAKE_RUNNER_STDERR", "") == "1";
  int calls_ = 0;
  int infers_ = 0;
  int crash_at_ = std::atoi(Env("FAKE_RUNNER_CRASH_AT", "0").c_str());
};

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "info" && Env("FAKE_RUNNER_MODE", "") == "bad-info") {
    std::puts("not json");
    return 0;
  }
  FakeRunner r;
  return runner::RunnerMain(argc, argv, r);
}
