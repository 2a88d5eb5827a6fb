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

// Threads that copy or compress large files (ZipWriterOptions::file_threads)
// at most: each holds about 4 MiB while compressing.
inline constexpr unsigned kMaxFileThreads = 16;

// `threads` 0 means one per core. zstd always runs through at least one
// worker, and large files through at least one file thread: the output is
// the same for every count >= 1.
inline ZipWriterOptions CartonWriterOptions(
    unsigned threads, std::uint32_t alignment = ZipWriterOptions{}.alignment) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  ZipWriterOptions options;
  options.alignment = alignment;
  options.zstd_workers = static_cast<int>(std::min(threads, kMaxZstdWorkers));
  options.file_threads = std::min(threads, kMaxFileThreads);
  return options;
}

}  // namespace carton
