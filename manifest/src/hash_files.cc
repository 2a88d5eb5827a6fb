#include "carton/manifest/hash_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "carton/common/unique_fd.h"

namespace carton::manifest {

namespace {

// pread into a buffer that stays in L2 costs ~5% less CPU than hashing an
// mmap (MADV_SEQUENTIAL) of a cached 500 MiB file (FORMAT.md, section
// Hashing), and a file cut short while being read gives a short read
// instead of SIGBUS.
constexpr std::size_t kReadBufferBytes = std::size_t{1} << 20;

Status OpenError(const std::string& path, const char* what, int err) {
  std::string msg = path + ": cannot " + what + ": " + std::strerror(err);
  if (err == ENOENT) return NotFound(std::move(msg));
  return IoError(std::move(msg));
}

// Size of a regular file, for scheduling.
Result<std::uint64_t> RegularFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return OpenError(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  return static_cast<std::uint64_t>(st.st_size);
}

Result<Digest> HashOne(const std::string& path, std::span<std::byte> buffer) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return OpenError(path, "open", errno);
  // The path was checked by stat() already, but it may have been replaced.
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return OpenError(path, "stat", errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  Sha256 hasher;
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd.get(), buffer.data(), buffer.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": cannot read at offset " + std::to_string(offset) + ": " +
                     std::strerror(errno));
    }
    if (n == 0) break;
    hasher.Update(buffer.first(static_cast<std::size_t>(n)));
    offset += n;
  }
  return hasher.Finish();
}

struct Job {
  std::size_t index;  // into paths
  std::uint64_t size;
};

// State shared by the workers of one HashFiles call.
struct Pool {
  std::span<const std::string> paths;
  std::vector<Job> jobs;  // largest first
  std::vector<Digest> digests;
  std::vector<Status> errors;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex exception_mu;
  std::exception_ptr exception;  // guarded by exception_mu

  void Work() {
    // An exception (std::bad_alloc) must not escape a thread; it is handed
    // to the caller after the join instead.
    try {
      auto buffer = std::make_unique_for_overwrite<std::byte[]>(kReadBufferBytes);
      while (!failed.load(std::memory_order_relaxed)) {
        std::size_t k = next.fetch_add(1, std::memory_order_relaxed);
        if (k >= jobs.size()) break;
        std::size_t i = jobs[k].index;
        Result<Digest> d = HashOne(paths[i], {buffer.get(), kReadBufferBytes});
        if (d.ok()) {
          digests[i] = *d;
        } else {
          errors[i] = d.status();
          failed.store(true, std::memory_order_relaxed);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(exception_mu);
      if (!exception) exception = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  }
};

}  // namespace

Result<std::vector<Digest>> HashFiles(std::span<const std::string> paths, unsigned threads) {
  if (paths.empty()) return std::vector<Digest>();
  Pool pool;
  pool.paths = paths;
  pool.jobs.reserve(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    CARTON_ASSIGN_OR_RETURN(std::uint64_t size, RegularFileSize(paths[i]));
    pool.jobs.push_back({i, size});
  }
  // Largest first, so that one big file does not start last and run alone.
  std::stable_sort(pool.jobs.begin(), pool.jobs.end(),
                   [](const Job& a, const Job& b) { return a.size > b.size; });
  pool.digests.resize(paths.size());
  pool.errors.resize(paths.size());

  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::size_t workers = std::min<std::size_t>({threads, kMaxHashThreads, paths.size()});
  {
    std::vector<std::jthread> helpers;
    helpers.reserve(workers);
    for (std::size_t t = 1; t < workers; ++t) {
      // Fewer threads than asked is still correct: the others share the work.
      try {
        helpers.emplace_back([&pool] { pool.Work(); });
      } catch (const std::system_error&) {
        break;
      }
    }
    pool.Work();
  }  // joins the helpers
  if (pool.exception) std::rethrow_exception(pool.exception);
  for (Status& s : pool.errors) {
    if (!s.ok()) return std::move(s);
  }
  return std::move(pool.digests);
}

}  // namespace carton::manifest
