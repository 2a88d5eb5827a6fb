#include "carton/manifest/hash_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"

namespace carton::manifest {

namespace {

// pread into a buffer that stays in L2 costs ~5% less CPU than hashing an
// mmap (MADV_SEQUENTIAL) of a cached 500 MiB file (FORMAT.md, section
// Hashing), and a file cut short while being read gives a short read
// instead of SIGBUS.
constexpr std::size_t kReadBufferBytes = std::size_t{1} << 20;

// Size of a regular file, for scheduling.
Result<std::uint64_t> RegularFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, path + ": cannot stat");
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  return static_cast<std::uint64_t>(st.st_size);
}

// Fails unless the open file `fd` is version `expected` (if given) of `path`.
Status CheckVersion(int fd, const std::string& path, const FileIdentity* expected,
                    const char* when) {
  if (expected == nullptr) return Status::Ok();
  auto identity = IdentityOfFd(fd);
  if (!identity.ok()) return identity.status().WithContext(path);
  if (*identity != *expected) return IoError(path + ": changed " + when);
  return Status::Ok();
}

Result<Digest> HashOne(const std::string& path, std::span<std::byte> buffer,
                       const FileIdentity* expected,
                       const std::function<void(std::uint64_t)>& on_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, path + ": cannot open");
  // The path was checked by stat() already, but it may have been replaced.
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, path + ": cannot stat");
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  CARTON_RETURN_IF_ERROR(CheckVersion(fd.get(), path, expected, "before it was hashed"));
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  Sha256 hasher;
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd.get(), buffer.data(), buffer.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path + ": cannot read at offset " + std::to_string(offset));
    }
    if (n == 0) break;
    hasher.Update(buffer.first(static_cast<std::size_t>(n)));
    if (on_bytes) on_bytes(static_cast<std::uint64_t>(n));
    offset += n;
  }
  CARTON_RETURN_IF_ERROR(CheckVersion(fd.get(), path, expected, "while it was hashed"));
  return hasher.Finish();
}

struct Job {
  std::size_t index;  // into paths
  std::uint64_t size;
};

}  // namespace

Result<std::vector<Digest>> HashFiles(std::span<const std::string> paths, unsigned threads,
                                      std::span<const FileIdentity> expected,
                                      const std::function<void(std::uint64_t)>& on_bytes) {
  if (paths.empty()) return std::vector<Digest>();
  if (!expected.empty() && expected.size() != paths.size()) {
    return InvalidArgument("HashFiles: " + std::to_string(expected.size()) +
                           " expected versions for " + std::to_string(paths.size()) + " files");
  }
  std::vector<Job> jobs;
  jobs.reserve(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    CARTON_ASSIGN_OR_RETURN(std::uint64_t size, RegularFileSize(paths[i]));
    jobs.push_back({i, size});
  }
  // Largest first, so that one big file does not start last and run alone.
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.size > b.size; });
  std::vector<Digest> digests(paths.size());
  std::vector<Status> errors(paths.size());
  std::atomic<bool> failed{false};
  ParallelFor(jobs.size(), std::min(threads, kMaxHashThreads), [&](std::size_t k) {
    if (failed.load(std::memory_order_relaxed)) return;
    thread_local std::unique_ptr<std::byte[]> buffer =
        std::make_unique_for_overwrite<std::byte[]>(kReadBufferBytes);
    std::size_t i = jobs[k].index;
    Result<Digest> d = HashOne(paths[i], {buffer.get(), kReadBufferBytes},
                               expected.empty() ? nullptr : &expected[i], on_bytes);
    if (d.ok()) {
      digests[i] = *d;
    } else {
      errors[i] = d.status();
      failed.store(true, std::memory_order_relaxed);
    }
  });
  for (Status& s : errors) {
    if (!s.ok()) return std::move(s);
  }
  return digests;
}

}  // namespace carton::manifest
