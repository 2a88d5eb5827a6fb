#include "tools/process_testing.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace carton::testing {
namespace {

// In a child: default dispositions and an empty mask for the signals the
// tests send, whatever the test runner set up.
void ResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

BackgroundCommand::BackgroundCommand(const std::string& command, const std::string& out_path,
                                     const std::string& err_path) {
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ResetSignals();
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    // env(1) runs the command in its own place (exec), assignments first.
    const std::string script = "exec env " + command;
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0 && exit_code_ < 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void BackgroundCommand::Signal(int signo) const { ::kill(pid_, signo); }

bool BackgroundCommand::running() {
  if (exit_code_ >= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = DecodeStatus(status);
    return false;
  }
  return true;
}

int BackgroundCommand::Wait(std::chrono::milliseconds timeout) {
  WaitUntil([&] { return !running(); }, timeout);
  return exit_code_;
}

bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::vector<std::string> EntriesContaining(const std::string& dir, const std::string& part) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(part) != std::string::npos) out.push_back(name);
  }
  return out;
}

SlowServer::SlowServer(const std::string& root, bool honour_range)
    : SlowServer(root, std::string(honour_range ? "range" : "norange")) {}

SlowServer::SlowServer(const std::string& root, const std::string& mode)
    : root_(root), log_(root + "/.requests.log") {
  std::filesystem::create_directories(root_);
  std::ofstream(log_, std::ios::trunc).close();
  const std::string script = std::string(CARTON_SOURCE_DIR) + "/tests/tools/slow_server.py";
  // Its first line is the port; its stderr goes beside the served folder.
  const std::string line = process_.Start({"/usr/bin/python3", script, root_, log_, mode},
                                          root_ + ".server.log", /*first_line=*/true);
  port_ = std::atoi(line.c_str());
  if (port_ <= 0) throw std::runtime_error("slow_server.py did not start");
}

std::string SlowServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
}

void SlowServer::SetRate(std::uint64_t bytes_per_second) const {
  std::ofstream(root_ + "/.rate", std::ios::trunc) << bytes_per_second << "\n";
}

std::vector<std::string> SlowServer::Ranges(const std::string& path) const {
  std::vector<std::string> out;
  std::ifstream in(log_);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string p, range;
    std::getline(fields, p, '\t');
    std::getline(fields, range, '\t');
    if (p == "/" + path) out.push_back(range);
  }
  return out;
}

}  // namespace carton::testing
