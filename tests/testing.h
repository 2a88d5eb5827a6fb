// Helpers shared by the tests: scratch directories and small byte builders.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton::testing {

// A fresh empty directory for one test, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::byte> Bytes(std::string_view s) {
  auto v = AsBytes(s);
  return {v.begin(), v.end()};
}

// A safetensors file from a raw header string and data bytes.
std::vector<std::byte> RawSafetensors(std::string_view header, std::size_t data_size,
                                      std::byte fill = std::byte{0});

void WriteBytes(const std::string& path, ByteView bytes);
// Writes `text` to `path`, making its parent directories first.
void WriteText(const std::string& path, const std::string& text);
// Names of the entries in `dir`, sorted (hidden ones included).
std::vector<std::string> ListDir(const std::string& dir);
std::string ReadText(const std::string& path);
// `n` incompressible bytes (pack stores them, deflate works hard on them),
// the same for the same `seed`.
std::string Noise(std::size_t n, std::uint64_t seed);
// Starts `argv` (a program's path, then its arguments) with its stdout and
// stderr into `log`, and `env` (NAME=value) added to the environment.
// Throws std::runtime_error when it cannot start.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
            const std::string& log = "/dev/null");

// Runs a shell command; returns its exit code and fills stdout/stderr.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandResult Run(const std::string& command);

// While it lives, writes that would make any file of this process larger
// than `bytes` fail with EFBIG (SIGXFSZ is ignored meanwhile).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes);
  ~FileSizeLimit();
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

// Ends a test case that cannot run on this machine, visibly: prints
// "CARTON-SKIPPED: <reason>", which CTest reports as a skip
// (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt), and returns. Catch2 v2
// has no SKIP of its own. Use it at the top level of a TEST_CASE body.
#define CARTON_SKIP(reason)                                 \
  do {                                                      \
    std::cout << "CARTON-SKIPPED: " << reason << std::endl; \
    WARN("skipped: " << reason);                            \
    return;                                                 \
  } while (false)

// The built `carton` binary (from $CARTON_BIN).
std::string CartonBin();

// Sets environment variable `name` to `value` for this process while
// alive, and restores what it was (or unsets it) afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace carton::testing
