#include "stderr_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "carton/common/posix_error.h"

namespace carton::runner::internal {
namespace {

// A line longer than this is passed on in pieces, so a runner that never
// writes a newline cannot make the caller hold unbounded memory.
constexpr std::size_t kMaxLine = 64 * 1024;

Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoIoError(errno, "pipe");
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<StderrReader>> StderrReader::Start(Sink sink, std::size_t keep) {
  std::unique_ptr<StderrReader> r(new StderrReader());
  CARTON_RETURN_IF_ERROR(MakePipe(&r->read_, &r->write_));
  CARTON_RETURN_IF_ERROR(MakePipe(&r->stop_read_, &r->stop_write_));
  r->sink_ = std::move(sink);
  r->keep_ = keep;
  r->thread_ = std::thread([p = r.get()] { p->Run(); });
  return r;
}

StderrReader::~StderrReader() {
  if (thread_.joinable()) {
    char c = 0;
    while (::write(stop_write_.get(), &c, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
}

void StderrReader::Consume(const char* data, std::size_t n, std::string* line) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tail_.append(data, n);
    if (tail_.size() > 2 * keep_) tail_.erase(0, tail_.size() - keep_);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (data[i] != '\n' && line->size() < kMaxLine) {
      line->push_back(data[i]);
      continue;
    }
    if (!line->empty() && line->back() == '\r') line->pop_back();
    if (sink_) sink_(*line);
    line->clear();
    if (data[i] != '\n') line->push_back(data[i]);
  }
}

void StderrReader::Run() {
  std::string line;
  char buf[4096];
  bool stopping = false;
  for (;;) {
    if (!stopping) {
      struct pollfd fds[2] = {{read_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
      int r = ::poll(fds, 2, -1);
      if (r < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) {
        // Read what is there without waiting for writers that linger.
        stopping = true;
        ::fcntl(read_.get(), F_SETFL, ::fcntl(read_.get(), F_GETFL) | O_NONBLOCK);
        continue;
      }
      if (fds[0].revents == 0) continue;
    }
    ssize_t n = ::read(read_.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer closed it, or nothing more while stopping
    Consume(buf, static_cast<std::size_t>(n), &line);
  }
  if (!line.empty() && sink_) sink_(line);
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  done_cv_.notify_all();
}

std::string StderrReader::Tail(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait_for(lock, timeout, [&] { return done_; });
  std::string out = tail_.size() > keep_ ? tail_.substr(tail_.size() - keep_) : tail_;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace carton::runner::internal
