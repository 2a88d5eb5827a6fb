#include "carton/common/temporaries.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "carton/common/progress.h"

namespace carton {
namespace {

struct Registry {
  std::mutex mu;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, std::pair<std::string, TemporaryKind>> paths;
};

// Never destroyed: the cleanup thread may use it while the process exits.
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

std::uint64_t AddLocked(Registry& r, std::string path, TemporaryKind kind) {
  const std::uint64_t id = r.next_id++;
  r.paths.emplace(id, std::make_pair(std::move(path), kind));
  return id;
}

std::size_t RemoveAllLocked(Registry& r) {
  std::size_t removed = 0;
  for (const auto& [id, entry] : r.paths) {
    std::error_code ec;
    if (entry.second == TemporaryKind::kDirectory) {
      if (std::filesystem::remove_all(entry.first, ec) > 0) ++removed;
    } else if (::unlink(entry.first.c_str()) == 0) {
      ++removed;
    }
  }
  r.paths.clear();
  return removed;
}

int interrupt_pipe[2] = {-1, -1};

extern "C" void OnInterrupt(int signo) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(signo);
  // Nothing else is async-signal-safe enough to do here.
  [[maybe_unused]] ssize_t n = ::write(interrupt_pipe[1], &b, 1);
  errno = saved;
}

[[noreturn]] void CleanUpAndExit(int signo) {
  Registry& r = TheRegistry();
  r.mu.lock();  // held until _exit: no temporary is made after this
  RemoveAllLocked(r);
  const char* line = ProgressLineShown() ? "\r\x1b[K" : "";
  const char* what = signo == SIGINT ? "interrupted" : "terminated";
  std::fprintf(stderr, "%scarton: %s\n", line, what);
  std::fflush(stderr);
  ::_exit(128 + signo);
}

}  // namespace

TemporaryPath::TemporaryPath(std::string path, TemporaryKind kind) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  id_ = AddLocked(r, std::move(path), kind);
}

TemporaryPath TemporaryPath::Create(std::string path, TemporaryKind kind,
                                    const std::function<bool()>& create) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  TemporaryPath t;
  if (create()) t.id_ = AddLocked(r, std::move(path), kind);
  return t;
}

TemporaryPath::TemporaryPath(TemporaryPath&& other) noexcept : id_(std::exchange(other.id_, 0)) {}

TemporaryPath& TemporaryPath::operator=(TemporaryPath&& other) noexcept {
  if (this != &other) {
    Release();
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

TemporaryPath::~TemporaryPath() { Release(); }

void TemporaryPath::Release() {
  if (id_ == 0) return;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.paths.erase(id_);
  id_ = 0;
}

bool InstallInterruptCleanup() {
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [] {
    if (::pipe2(interrupt_pipe, O_CLOEXEC) != 0) return;
    try {
      std::thread([] {
        unsigned char b = 0;
        for (;;) {
          const ssize_t n = ::read(interrupt_pipe[0], &b, 1);
          if (n == 1) CleanUpAndExit(b);
          if (n < 0 && errno == EINTR) continue;
          return;
        }
      }).detach();
    } catch (const std::system_error&) {
      return;
    }
    struct sigaction sa {};
    sa.sa_handler = &OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    installed = true;
    for (int signo : {SIGINT, SIGTERM}) {
      // A signal the parent set to be ignored (a background job's SIGINT)
      // stays ignored.
      struct sigaction old {};
      if (::sigaction(signo, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
      installed = ::sigaction(signo, &sa, nullptr) == 0 && installed;
    }
  });
  return installed;
}

std::size_t RemoveTemporariesForExit() {
  Registry& r = TheRegistry();
  r.mu.lock();  // never unlocked: the process is about to exit
  return RemoveAllLocked(r);
}

std::size_t RegisteredTemporaryCount() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.paths.size();
}

}  // namespace carton
