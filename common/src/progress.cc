#include "carton/common/progress.h"

#include <unistd.h>

#include <cstdio>

namespace carton {
namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
std::atomic<int> lines_shown{0};

std::string Duration(double seconds) {
  const auto s = static_cast<std::uint64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60),
                  static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  }
  return buf;
}

}  // namespace

std::string HumanBytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[u]);
  return buf;
}

bool ProgressLineShown() { return lines_shown.load() > 0; }

ProgressLine::ProgressLine(std::string label, bool wanted)
    : label_(std::move(label)),
      enabled_(wanted && ::isatty(2) == 1),
      start_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() { Finish(); }

void ProgressLine::Update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  done_ = std::max(done_, done);
  total_ = total;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < kRedrawInterval) return;
  DrawLocked(now);
}

void ProgressLine::Add(std::uint64_t bytes, std::uint64_t total) {
  if (!enabled_) return;
  Update(added_ += bytes, total);
}

ProgressFn ProgressLine::Callback() {
  return [this](std::uint64_t done, std::uint64_t total) { Update(done, total); };
}

void ProgressLine::Finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (!drawn_) return;
  std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
  --lines_shown;
}

void ProgressLine::DrawLocked(std::chrono::steady_clock::time_point now) {
  if (!drawn_) ++lines_shown;
  drawn_ = true;
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::string line = "\rcarton: " + label_ + ": ";
  if (total_ > 0) {
    char pct[16];
    const double fraction = static_cast<double>(std::min(done_, total_)) / total_;
    std::snprintf(pct, sizeof(pct), "%3.0f%% ", 100 * fraction);
    line += pct;
    line += HumanBytes(done_) + " of " + HumanBytes(total_);
  } else {
    line += HumanBytes(done_);
  }
  if (seconds > 0.2 && done_ > 0) {
    const double rate = done_ / seconds;
    line += ", " + HumanBytes(static_cast<std::uint64_t>(rate)) + "/s";
    if (total_ > done_) line += ", " + Duration((total_ - done_) / rate) + " left";
  }
  line += "\x1b[K";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace carton
