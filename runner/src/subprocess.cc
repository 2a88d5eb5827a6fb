#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "carton/common/posix_error.h"

extern char** environ;

namespace carton::runner::internal {
namespace {

using Clock = std::chrono::steady_clock;

// posix_spawn's dup2 leaves close-on-exec set when source and target are
// the same descriptor, so move sources out of the way first.
Result<UniqueFd> Above(int fd, int min) {
  UniqueFd out(::fcntl(fd, F_DUPFD_CLOEXEC, min));
  if (!out.valid()) return ErrnoIoError(errno, "fcntl");
  return out;
}

// This process's environment with `env` set over it.
std::vector<std::string> ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(env.begin(), env.end(), [&](const auto& kv) {
      return entry.size() > kv.first.size() && entry.starts_with(kv.first) &&
             entry[kv.first.size()] == '=';
    });
    if (!replaced) out.emplace_back(entry);
  }
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace

Result<Subprocess> Subprocess::Spawn(const std::vector<std::string>& argv, int stdout_fd,
                                     int stderr_fd, int pass_fd,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd.valid()) return ErrnoIoError(errno, "/dev/null");
  UniqueFd out, err, pass;
  CARTON_ASSIGN_OR_RETURN(UniqueFd in, Above(null_fd.get(), 10));
  if (stdout_fd >= 0) {
    CARTON_ASSIGN_OR_RETURN(out, Above(stdout_fd, 10));
  }
  if (stderr_fd >= 0) {
    CARTON_ASSIGN_OR_RETURN(err, Above(stderr_fd, 10));
  }
  if (pass_fd >= 0) {
    CARTON_ASSIGN_OR_RETURN(pass, Above(pass_fd, 10));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.get(), 0);
  if (out.valid()) posix_spawn_file_actions_adddup2(&actions, out.get(), 1);
  if (err.valid()) posix_spawn_file_actions_adddup2(&actions, err.get(), 2);
  if (pass.valid()) posix_spawn_file_actions_adddup2(&actions, pass.get(), 3);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment;
  std::vector<char*> envp;
  if (!env.empty()) {
    environment = ChildEnvironment(env);
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                         env.empty() ? environ : envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return ErrnoIoError(rc, argv[0] + ": cannot start");
  Subprocess p;
  p.pid_ = pid;
  return p;
}

Subprocess::Subprocess(Subprocess&& o) noexcept : pid_(std::exchange(o.pid_, -1)) {}
Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    Kill();
    pid_ = std::exchange(o.pid_, -1);
  }
  return *this;
}
Subprocess::~Subprocess() { Kill(); }

std::optional<int> Subprocess::Poll() {
  if (pid_ < 0) return std::nullopt;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return status;
  }
  return std::nullopt;
}

Result<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (pid_ < 0) return Internal("no child process");
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    if (auto s = Poll()) return *s;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
  Kill();
  return Internal("did not exit within " + std::to_string(timeout.count() / 1000.0) + " s; killed");
}

void Subprocess::Kill() {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "wait status " + std::to_string(status);
}

Result<UniqueFd> MakeCaptureFile() {
  UniqueFd fd(::memfd_create("carton-runner-stderr", MFD_CLOEXEC));
  if (!fd.valid()) return ErrnoIoError(errno, "memfd_create");
  return fd;
}

std::string TailOf(int fd, std::size_t n) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return "";
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t off = size > n ? size - n : 0;
  std::string out(size - off, '\0');
  ssize_t got = ::pread(fd, out.data(), out.size(), static_cast<off_t>(off));
  out.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout, std::size_t max_output) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoIoError(errno, "pipe");
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  CARTON_ASSIGN_OR_RETURN(UniqueFd err, MakeCaptureFile());
  CARTON_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn(argv, out_w.get(), err.get(), -1));
  out_w.Reset();
  CommandOutput result;
  auto deadline = Clock::now() + timeout;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      child.Kill();
      return Internal(argv[0] + ": did not answer within " +
                      std::to_string(timeout.count() / 1000.0) + " s; killed");
    }
    struct pollfd pfd = {out_r.get(), POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = ::read(out_r.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (result.out.size() < max_output) result.out.append(buf, static_cast<std::size_t>(n));
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  CARTON_ASSIGN_OR_RETURN(result.status, child.Wait(std::max(left, std::chrono::milliseconds(1))));
  result.err = TailOf(err.get(), max_output);
  return result;
}

}  // namespace carton::runner::internal
