// The ZipWriter settings every command that writes a carton uses
// (pack, shrink, fetch), so that a file's compressed bytes do not depend on
// which command wrote it or how many threads it had.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>

#include "carton/zip/writer.h"

namespace carton {

// More zstd workers than this gain nothing on models (jobs are 2 MiB) and
// cost ~20 MiB each.
inline constexpr unsigned kMaxZstdWorkers = 4;

// `threads` 0 means one per core. zstd always runs through at least one
// worker: its output is the same for every worker count >= 1.
inline ZipWriterOptions CartonWriterOptions(
    unsigned threads, std::uint32_t alignment = ZipWriterOptions{}.alignment) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  ZipWriterOptions options;
  options.alignment = alignment;
  options.zstd_workers = static_cast<int>(std::min(threads, kMaxZstdWorkers));
  return options;
}

}  // namespace carton
