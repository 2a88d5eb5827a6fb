// CompressFrames: compresses a file as independent zstd frames of
// kZipFrameSize input bytes on several threads, writing each frame straight
// into its place in the archive. The bytes are those of MakeEncoder(kZstd,
// level, size, 0, /*frames=*/true), whatever the thread count.
//
// A frame's place is the entry's data offset plus the sizes of the frames
// before it, known as soon as those are compressed: each thread compresses
// a frame, waits only until the frames before it are compressed (not
// written), takes its place and writes it there itself. The CRC-32 of the
// file is combined from the frames' in order. So reads, compression and
// writes all run on the threads; nothing goes through a spool or through
// libzip's copy.
//
// Memory: per thread, one frame of input, its compressed bytes and a zstd
// context (about 4 MiB at the default level).
//
// Thread-safety: a blocking call; its threads end before it returns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "carton/common/status.h"

namespace carton::zip_internal {

struct FramesInput {
  std::string name;  // the entry's, for messages
  std::string path;  // the file's, for messages
  int fd = -1;       // open for reading (pread)
  std::uint64_t size = 0;
  int level = 0;  // a resolved zstd level
};

struct FramesOutput {
  int fd = -1;               // the archive's temporary file (pwrite)
  std::string path;          // the archive's, for messages
  std::uint64_t offset = 0;  // where the entry's data starts
};

struct FramesResult {
  std::uint64_t compressed_size = 0;
  std::uint32_t crc32 = 0;
};

// Compresses `in` into `out` on `threads` threads (at least one). The
// calling thread reports progress: `on_read` (if set) gets the input bytes
// of the frames placed so far, on this thread. Errors: kIoError (a read or
// write failed; the file is shorter or longer than `in.size`), kInternal.
Result<FramesResult> CompressFrames(const FramesInput& in, const FramesOutput& out,
                                    unsigned threads,
                                    const std::function<void(std::uint64_t)>& on_read);

}  // namespace carton::zip_internal
