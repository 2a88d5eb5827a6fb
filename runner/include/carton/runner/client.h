// Talking to a runner process in `serve` mode: load once, infer many times.
//
// Start() spawns `<runner> serve MODEL --fd 3` with one end of a Unix
// SOCK_SEQPACKET socket pair as its fd 3 and waits for it to report that
// the model is loaded. Infer() writes the inputs as a safetensors image into
// a shared-memory arena (a memfd sealed against shrinking, mapped once and
// reused; one copy) and reads the outputs in place from one of the runner's
// output arenas (no copy). The runner keeps a few of those (up to 8), and
// never rewrites one while any output tensor read from it lives, so outputs
// stay valid for as long as the caller keeps them; the usual loop
// `out = Infer(in)` alternates between two warm arenas. Only a small JSON
// message crosses the socket, with an arena's fd when it is new.
// Every wait has a deadline; a runner that crashes, hangs or answers
// nonsense gives an error naming the runner (with the end of its stderr),
// and is killed. What the runner writes to stderr or stdout reaches the caller line
// by line as it comes: on this process's stderr as "[<name>] <line>", or
// through RunnerProcessOptions::on_stderr_line.
//
// Thread-safety: one RunnerProcess per thread. Move-only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/format/tensor.h"
#include "carton/loader/device.h"

namespace carton::runner {

struct RunnerProcessOptions {
  std::chrono::milliseconds load_timeout = std::chrono::minutes(5);
  std::chrono::milliseconds infer_timeout = std::chrono::minutes(1);
  // --opt KEY=VALUE overrides of [runner.opts].
  std::map<std::string, std::string> opts;
  // The runner reports inputs that break the carton's [[input]]s as
  // warnings and runs the model anyway (runner.h LoadContext::lenient):
  // for cartons whose declarations do not hold, such as some packed by the
  // original implementation, which never checked them.
  bool lenient = false;
  // Gets each line the runner writes to its stderr (without the newline),
  // as soon as it is complete, on a thread of the RunnerProcess; it must
  // not throw, nor block for long. Unset: each line is written to this
  // process's stderr as "[<name>] <line>", <name> being the runner's file
  // name without "carton-runner-". A function that does nothing silences
  // it.
  std::function<void(std::string_view line)> on_stderr_line;
  // The device the runner runs on (carton/loader/device.h): it is started
  // with CUDA_VISIBLE_DEVICES naming that device alone (its UUID; "" for
  // the CPU) and told it with `--device NAME` (`--default-device NAME` when
  // the caller did not choose it). Unset: the default, resolved by Start
  // (the first GPU when the driver lists one, else the CPU).
  std::optional<loader::Device> device;
};

class RunnerProcess {
 public:
  // `model` is what the runner loads: a .carton, a cache entry or an
  // unpacked carton directory. Errors (each naming the runner): kIoError
  // (cannot start), kInternal (crashed, timed out, broke the protocol), and
  // the runner's own load error with its code.
  static Result<RunnerProcess> Start(const std::string& runner_path, const std::string& model,
                                     const RunnerProcessOptions& options = {});

  RunnerProcess(RunnerProcess&&) noexcept;
  RunnerProcess& operator=(RunnerProcess&&) noexcept;
  ~RunnerProcess();  // closes the socket; kills the runner if it lingers

  // Runs one inference. Numeric outputs view the runner's output arena; their
  // `owner` keeps it mapped and reserved for them, so they stay valid (and
  // unchanged) as long as any output of this call lives, across later calls
  // and even after the runner has exited. Holding them is what reserves the
  // memory: a caller that keeps the outputs of more than 8 calls at once
  // gets each further call's outputs in a fresh arena of their own (correct,
  // but slower: new shared pages to fault in). The arenas are mapped
  // writable and the runner never reads them, so a caller may write into
  // its outputs' bytes (the Python package hands them out as writable
  // arrays). Errors: the runner's error (with its code), or kInternal when
  // it crashed, timed out or broke the protocol (it is then killed and
  // further calls fail).
  Result<std::vector<Tensor>> Infer(const std::vector<Tensor>& inputs);

  // Asks the runner to exit and waits for it. Errors: kInternal if it
  // exits badly.
  Status Close();

  const std::string& runner_path() const;

 private:
  struct Impl;
  explicit RunnerProcess(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton::runner
