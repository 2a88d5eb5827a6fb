#include "carton/common/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace carton {

void ParallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& task) {
  if (n == 0) return;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min<std::size_t>(threads, n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::exception_ptr exception;  // guarded by mu
  auto work = [&] {
    // An exception must not escape a thread: it is handed to the caller.
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= n) break;
        task(i);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!exception) exception = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };
  {
    std::vector<std::jthread> helpers;
    helpers.reserve(workers);
    for (std::size_t t = 1; t < workers; ++t) {
      try {
        helpers.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // fewer threads still finish the work
      }
    }
    work();
  }  // joins the helpers
  if (exception) std::rethrow_exception(exception);
}

}  // namespace carton
