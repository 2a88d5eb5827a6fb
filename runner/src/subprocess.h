// Private: running runner executables as child processes, never waiting
// on them without a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton::runner::internal {

class Subprocess {
 public:
  // Starts argv[0] with stdin from /dev/null. `stdout_fd`/`stderr_fd`
  // (when >= 0) become the child's stdout/stderr; `pass_fd` (when >= 0)
  // becomes its fd 3. `env` (NAME, value) are set in the child's
  // environment, over this process's. Errors: kIoError naming the program.
  static Result<Subprocess> Spawn(const std::vector<std::string>& argv, int stdout_fd,
                                  int stderr_fd, int pass_fd,
                                  const std::vector<std::pair<std::string, std::string>>& env = {});

  Subprocess() = default;
  Subprocess(Subprocess&& o) noexcept;
  Subprocess& operator=(Subprocess&& o) noexcept;
  ~Subprocess();  // kills and reaps a child still running

  // Waits up to `timeout` for the child to exit; kills it (SIGKILL) when
  // the time runs out. Returns the wait status. Errors: kInternal "did not
  // exit within N s" after the kill.
  Result<int> Wait(std::chrono::milliseconds timeout);
  // Non-blocking: the wait status if the child has exited.
  std::optional<int> Poll();
  void Kill();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// "exit code 3", "signal 11 (Segmentation fault)".
std::string DescribeWaitStatus(int status);

struct CommandOutput {
  int status = 0;  // wait status
  std::string out;
  std::string err;
};
// Runs argv to completion, capturing stdout and stderr (each at most
// `max_output` bytes kept). Errors: kIoError, kInternal on timeout (the
// child is killed).
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout,
                                 std::size_t max_output = 1 << 20);

// A memfd to collect a child's stderr; TailOf reads its last `n` bytes.
Result<UniqueFd> MakeCaptureFile();
std::string TailOf(int fd, std::size_t n);

}  // namespace carton::runner::internal
