// The temporary files and directories a process has on disk, so that an
// interrupted process can remove them before it exits.
//
// Every place that makes a temporary registers it here for as long as it
// exists (AtomicFile does so for its temporary file; carton's unpack, the
// zip writer's spool, downloads and the loader's cache directories for
// theirs). InstallInterruptCleanup(), called once by a program's main()
// before it starts threads, makes SIGINT and SIGTERM remove every
// registered temporary, end a progress line that is shown, and exit with
// 128 + the signal number (130, 143).
//
// How: the signal handler only writes the signal number to a pipe (an
// async-signal-safe write); a thread waiting on that pipe does the removal
// in ordinary context, holding the registry's lock, and calls _exit while
// still holding it. Creating and registering a temporary happen under the
// same lock (TemporaryPath::Create), so an interrupt never falls between
// the two: a temporary exists only while it is registered, and none is
// made after the cleanup started. Files kept on purpose across an
// interrupt (partial downloads, which a later run resumes) are simply not
// registered.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace carton {

enum class TemporaryKind {
  kFile,       // removed with unlink(2)
  kDirectory,  // removed with everything in it
};

// A registration: the path is on the list from construction until
// destruction or Release(). Move-only.
class TemporaryPath {
 public:
  TemporaryPath() = default;
  // Registers `path`, which the caller is about to create or has created.
  TemporaryPath(std::string path, TemporaryKind kind);
  // Runs `create` under the registry's lock and registers `path` if it
  // returns true; an empty registration otherwise.
  static TemporaryPath Create(std::string path, TemporaryKind kind,
                              const std::function<bool()>& create);
  TemporaryPath(TemporaryPath&& other) noexcept;
  TemporaryPath& operator=(TemporaryPath&& other) noexcept;
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  ~TemporaryPath();  // Release()

  bool registered() const { return id_ != 0; }
  // Takes the path off the list (it was renamed into place, or removed).
  void Release();

 private:
  std::uint64_t id_ = 0;
};

// Installs the SIGINT/SIGTERM handling described above. Call once, before
// other threads start; later calls do nothing. Returns false if the pipe,
// the thread or the handlers could not be set up (signals then keep their
// default action).
bool InstallInterruptCleanup();

// Removes every registered temporary now; later registrations block
// forever. For a process about to exit. Returns how many were removed.
std::size_t RemoveTemporariesForExit();

// How many temporaries are registered (for tests).
std::size_t RegisteredTemporaryCount();

}  // namespace carton
