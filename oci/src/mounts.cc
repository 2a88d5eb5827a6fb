#include "mounts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "carton/common/unique_fd.h"
#include "carton/links/cache_layout.h"

namespace carton::oci {
namespace {

// Most bytes of a record read, from its end: older lines are ignored.
constexpr std::size_t kMaxRecordSize = 64 << 10;

std::string RecordPath(const std::string& root, const manifest::Digest& digest) {
  return links::CacheLayout(root).OciMountPath(manifest::ToHex(digest));
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return lines;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return lines;
  const bool cut = static_cast<std::uint64_t>(st.st_size) > kMaxRecordSize;
  if (cut && ::lseek(fd.get(), st.st_size - static_cast<off_t>(kMaxRecordSize), SEEK_SET) < 0) {
    return lines;
  }
  std::string text(kMaxRecordSize, '\0');
  std::size_t have = 0;
  while (have < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + have, text.size() - have);
    if (n <= 0) break;
    have += static_cast<std::size_t>(n);
  }
  text.resize(have);
  // After a cut the first line is partial.
  std::size_t start = cut ? text.find('\n') + 1 : 0;
  if (cut && start == 0) return lines;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // a line being written
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> KnownRepositories(const std::string& cache_root,
                                           const std::string& registry, const std::string& except,
                                           const manifest::Digest& digest) {
  std::vector<std::string> out;
  if (cache_root.empty()) return out;
  const std::string prefix = registry + " ";
  const auto lines = ReadLines(RecordPath(cache_root, digest));
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->rfind(prefix, 0) != 0) continue;
    std::string repo = it->substr(prefix.size());
    if (repo.empty() || repo == except || std::find(out.begin(), out.end(), repo) != out.end()) {
      continue;
    }
    out.push_back(std::move(repo));
  }
  return out;
}

void RememberRepository(const std::string& cache_root, const std::string& registry,
                        const std::string& repository, const manifest::Digest& digest) {
  if (cache_root.empty()) return;
  const std::string path = RecordPath(cache_root, digest);
  const std::string line = registry + " " + repository;
  const auto lines = ReadLines(path);
  if (!lines.empty() && lines.back() == line) return;
  std::error_code ec;
  std::filesystem::create_directories(links::CacheLayout(cache_root).OciMountsDir(), ec);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd.valid()) return;
  const std::string text = line + "\n";
  // One write(2) with O_APPEND: lines of concurrent writers never mix.
  (void)!::write(fd.get(), text.data(), text.size());
}

}  // namespace carton::oci
