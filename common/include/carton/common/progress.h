// Progress of long operations: the callback libraries take, and the one
// progress line the command-line tool draws.
//
// Libraries report progress through a ProgressFn in their options structs
// and never draw; the CLI turns a ProgressFn into a ProgressLine. A
// ProgressLine draws on stderr only when asked to and stderr is a terminal:
// one line redrawn in place ("\r", then clear to the end of the line) with
// the label, percent, bytes done and total, rate and time left, at most ten
// times a second, and cleared when it finishes.
//
// Thread-safety: a ProgressLine may be updated from any number of threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace carton {

// Called with the bytes done so far and the total (0 when unknown). Callers
// may call it from several threads; `done` never decreases.
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

class ProgressLine {
 public:
  // Draws nothing unless `wanted` and stderr is a terminal.
  ProgressLine(std::string label, bool wanted);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine();  // Finish()

  bool enabled() const { return enabled_; }

  // Sets the count; redraws if the last drawing is 100 ms old.
  void Update(std::uint64_t done, std::uint64_t total);
  // Adds `bytes` to the count, against `total`.
  void Add(std::uint64_t bytes, std::uint64_t total);
  // A callback that forwards to Update; valid while this object lives.
  ProgressFn Callback();
  // Clears the line if anything was drawn. Later updates draw nothing.
  void Finish();

 private:
  void DrawLocked(std::chrono::steady_clock::time_point now);

  std::string label_;
  bool enabled_;
  std::mutex mu_;
  std::atomic<std::uint64_t> added_{0};
  std::uint64_t done_ = 0;
  std::uint64_t total_ = 0;
  bool drawn_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

// True while a ProgressLine has text on the terminal; an interrupt handler
// ends the line before it exits.
bool ProgressLineShown();

// "1.5 GiB", "512 B": sizes for people.
std::string HumanBytes(std::uint64_t bytes);

}  // namespace carton
