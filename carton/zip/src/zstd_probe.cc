// ZstdPays: pack's automatic choice of zstd (compression.h).
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <vector>

#include "carton/common/unique_fd.h"
#include "carton/zip/compression.h"

namespace carton {

namespace {

constexpr std::size_t kSample = 128 << 10;

bool SamplePays(const std::vector<char>& sample) {
  if (sample.empty()) return false;
  std::vector<char> out(ZSTD_compressBound(sample.size()));
  std::size_t n = ZSTD_compress(out.data(), out.size(), sample.data(), sample.size(), 1);
  if (ZSTD_isError(n)) return false;
  return n * 10 < sample.size() * 9;
}

}  // namespace

bool ZstdPays(ByteView data) {
  const auto* p = reinterpret_cast<const char*>(data.data());
  std::vector<char> sample(p, p + std::min(data.size(), kSample));
  if (data.size() > kSample) {
    const std::size_t mid = data.size() / 2;
    sample.insert(sample.end(), p + mid, p + mid + std::min(data.size() - mid, kSample));
  }
  return SamplePays(sample);
}

bool ZstdPays(const std::string& path, std::uint64_t size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  std::vector<char> sample;
  sample.reserve(2 * kSample);
  for (std::uint64_t offset : {std::uint64_t{0}, size / 2}) {
    std::size_t old = sample.size();
    sample.resize(old + kSample);
    ssize_t n = ::pread(fd.get(), sample.data() + old, kSample, static_cast<off_t>(offset));
    sample.resize(old + (n > 0 ? static_cast<std::size_t>(n) : 0));
    if (size <= kSample) break;
  }
  return SamplePays(sample);
}

}  // namespace carton
