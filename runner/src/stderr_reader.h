// Private: a runner's stderr, read from a pipe by a thread of its own.
// Each line goes to a sink as soon as it is complete, and the last bytes
// are kept for error messages.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton::runner::internal {

class StderrReader {
 public:
  // Gets each line without its line ending, on the reader's thread.
  using Sink = std::function<void(std::string_view line)>;

  // Makes the pipe and starts the thread; `keep` is how many of the last
  // bytes Tail() can give. Errors: kIoError.
  static Result<std::unique_ptr<StderrReader>> Start(Sink sink, std::size_t keep);

  // Reads what the pipe still holds, then stops the thread (a writer that
  // outlives the runner, say a child of it, does not keep it waiting).
  ~StderrReader();
  StderrReader(const StderrReader&) = delete;
  StderrReader& operator=(const StderrReader&) = delete;

  // The pipe's write end, to become the child's stderr. Close it with
  // CloseWriteEnd() once the child is started.
  int write_fd() const { return write_.get(); }
  void CloseWriteEnd() { write_.Reset(); }

  // The last bytes read (at most `keep`), without trailing line endings,
  // after waiting up to `timeout` for every writer to close the pipe (so a
  // runner that just died has had all it wrote read).
  std::string Tail(std::chrono::milliseconds timeout);

 private:
  StderrReader() = default;
  void Run();
  void Consume(const char* data, std::size_t n, std::string* line);

  UniqueFd read_, write_, stop_read_, stop_write_;
  Sink sink_;
  std::size_t keep_ = 0;
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  // guarded by mu_
  std::string tail_;   // guarded by mu_
  std::thread thread_;
};

}  // namespace carton::runner::internal
