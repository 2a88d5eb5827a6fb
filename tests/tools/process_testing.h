// Processes for the CLI's interrupt and download tests: a command started
// in the background with default signal dispositions (so SIGINT reaches
// it, unlike a shell's background job), and a throttled file server on
// 127.0.0.1 (tests/tools/slow_server.py) that logs Range requests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "registry_testing.h"
#include "testing.h"

namespace carton::testing {

// `command` (VAR=VALUE assignments, then a program and its arguments) run
// by /bin/sh as `exec env command`, stdout and stderr to files.
class BackgroundCommand {
 public:
  BackgroundCommand(const std::string& command, const std::string& out_path,
                    const std::string& err_path);
  ~BackgroundCommand();  // kills it if still running
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  void Signal(int signo) const;
  // The exit code, or 128 + the signal that killed it; -1 after `timeout`.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  bool running();

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// Polls `condition` every 10 ms until it holds or `timeout` passes.
bool WaitUntil(const std::function<bool()>& condition,
               std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Entries of `dir` whose names contain `part` (hidden ones included).
std::vector<std::string> EntriesContaining(const std::string& dir, const std::string& part);

// slow_server.py serving `root`.
class SlowServer {
 public:
  // `honour_range`: answer Range requests with 206 (else always 200).
  SlowServer(const std::string& root, bool honour_range);
  // `mode`: "range", "norange", "badrange" or "changing" (slow_server.py).
  SlowServer(const std::string& root, const std::string& mode);
  SlowServer(const SlowServer&) = delete;
  SlowServer& operator=(const SlowServer&) = delete;

  std::string Url(const std::string& path) const;
  // Bytes per second from now on (0: unlimited).
  void SetRate(std::uint64_t bytes_per_second) const;
  // Each request for `path`: its Range header ("-" when none).
  std::vector<std::string> Ranges(const std::string& path) const;

 private:
  std::string root_;
  std::string log_;
  ChildProcess process_;  // killed with the server
  int port_ = 0;
};

}  // namespace carton::testing
