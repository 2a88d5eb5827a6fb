// The runner SDK: what a runner author implements, and the standard runner
// command line the SDK provides around it (runner/PROTOCOL.md).
//
//   class MyRunner : public carton::runner::Runner {
//     RunnerIdentity Identity() const override { return {"mine", "1.2.0", 1}; }
//     Status Load(const std::string& model_dir, const LoadContext& ctx) override;
//     Result<std::vector<Tensor>> Infer(const std::vector<Tensor>& inputs) override;
//   };
//   int main(int argc, char** argv) { MyRunner r; return carton::runner::RunnerMain(argc, argv, r);
//   }
//
// gives an executable `carton-runner-mine` with the commands
//   info                          JSON: runner_name, framework_version, runner_compat_version
//   self-test MODEL [--rtol R] [--atol A] [--json]
//   infer MODEL --input NAME=FILE.safetensors[:TENSOR]... --output OUT.safetensors
//   serve MODEL --fd 3            requests over a Unix socket, tensors in sealed memfds
// and every command takes `--opt KEY=VALUE` to override [runner.opts] and
// `--device cpu|GPU-<uuid>|MIG-<uuid>` (LoadContext::device; without it, the
// default device).
//
// Ownership: Infer's input views are valid until Infer returns. Outputs may
// own their bytes (Tensor::Owned) or view memory the runner keeps alive
// (set Tensor::owner, or keep it valid until the next Infer or the end of
// the process); the SDK copies them out before calling Infer again.
// Threading: the SDK calls Load once, then Infer from one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor.h"
#include "carton/loader/device.h"
#include "carton/loader/loader.h"

namespace carton::runner {

using carton::Tensor;

// Version of the protocol between callers and runners (PROTOCOL.md).
inline constexpr int kProtocolVersion = 2;

struct RunnerIdentity {
  std::string runner_name;        // matches [runner] runner_name
  std::string framework_version;  // a semver version, "1.13.1"
  std::uint64_t runner_compat_version = 1;
};

// What a runner sees of the carton when loading it.
struct LoadContext {
  CartonConfig config;  // inputs, outputs (with internal_name), runner info
  // [runner.opts] with the caller's --opt overrides applied. Runners should
  // warn (on stderr) about options they do not understand.
  std::map<std::string, RunnerOpt> opts;
  std::string root_dir;  // the directory holding carton.toml and model/
  // The loaded carton, alive as long as the runner process: every file is
  // in model_dir, and large stored model/*.safetensors files and
  // tensor_data tensors are also zero-copy views here (model_safetensors()).
  const loader::LoadedCarton* carton = nullptr;
  // The caller asked to run a carton whose declarations may not hold
  // (`--lenient`): a runner that checks inputs against [[input]] writes
  // what does not hold to stderr as a warning and runs the model anyway.
  bool lenient = false;
  // The caller checks each call's inputs against [[input]] and reports
  // what does not hold (serve mode: runner::Model does): a runner that
  // checks them too then says nothing of a misfit it runs leniently, so a
  // warning is shown once.
  bool caller_checks_inputs = false;
  // The device to run on (carton/loader/device.h): the CPU, or one GPU that
  // CUDA_VISIBLE_DEVICES names alone, so that a framework sees it as
  // cuda:0. `device.requested` is false when the caller did not choose it
  // (the default: the first GPU when there is one): a runner that cannot
  // use a GPU then runs on the CPU with a note on stderr, where a GPU the
  // caller named is an error.
  loader::Device device;
};

class Runner {
 public:
  virtual ~Runner() = default;
  virtual RunnerIdentity Identity() const = 0;
  // Loads the model from `model_dir` (files open by name there).
  virtual Status Load(const std::string& model_dir, const LoadContext& context) = 0;
  // Runs the model. Inputs come in the order of the carton's [[input]]
  // (when declared); outputs are matched by name.
  virtual Result<std::vector<Tensor>> Infer(const std::vector<Tensor>& inputs) = 0;
};

// The device this runner process runs on: LoadContext::device, set by
// RunnerMain before it calls Load (the CPU before that, and in a process
// that is not a runner). For code that runs without the context at hand.
const loader::Device& RunnerDevice();

// The standard runner command line. Returns the process exit code: 0 ok,
// 1 the input is bad (a failing self-test included), 2 trouble.
int RunnerMain(int argc, char** argv, Runner& runner);

// Parses a --opt value: true/false, an integer, a float, else a string.
RunnerOpt ParseRunnerOpt(std::string_view text);

}  // namespace carton::runner
