#include "archive.h"

#include <atomic>
#include <thread>

namespace carton::internal {

Result<std::string> ReadTextEntry(const ZipReader& zip, std::string_view name,
                                  std::uint64_t limit) {
  const ZipEntry* e = zip.Find(name);
  if (e == nullptr) return NotFound(std::string(name) + ": missing from the archive");
  if (e->size > limit) {
    return Corrupt(std::string(name) + ": " + std::to_string(e->size) +
                   " bytes, over the limit of " + std::to_string(limit));
  }
  std::string out;
  out.reserve(e->size);
  CARTON_RETURN_IF_ERROR(zip.ReadTo(name, [&](ByteView chunk) {
    out.append(AsChars(chunk));
    return Status::Ok();
  }));
  return out;
}

void ParallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& task) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, n));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) task(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace carton::internal
