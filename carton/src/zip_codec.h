// Streaming deflate and zstd for zip entries: encoders for ZipWriter,
// decoders for ZipReader.
//
// Deflate is raw (no zlib header), as zip stores it. Memory per encoder or
// decoder is bounded: a 1 MiB output buffer plus the codec's own state (zstd
// at kZipMaxZstdLevel: ~90 MiB to compress; decoding refuses windows over
// kZstdMaxWindowLog).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "carton/carton/zip.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton::zip_codec {

// Receives output bytes; an error stops the codec and is returned as is.
using ByteSink = std::function<Status(ByteView)>;

// Largest zstd window (log2 bytes) a decoder accepts: 64 MiB.
inline constexpr int kZstdMaxWindowLog = 26;

// The level to use for `method` given a caller's level (0 means default).
// Errors: kInvalidArgument for a level the method does not have.
Result<int> ResolveLevel(Compression method, int level);

class Encoder {
 public:
  virtual ~Encoder() = default;
  // Compresses `in`, handing finished output to `out`.
  virtual Status Update(ByteView in, const ByteSink& out) = 0;
  // Flushes the rest of the stream. REQUIRES: called once, after all input.
  virtual Status Finish(const ByteSink& out) = 0;
};

// An encoder for `method` (kDeflate or kZstd) at a level from ResolveLevel.
// `size` is the exact number of input bytes that will follow (zstd records
// it in the frame header). Errors: kInvalidArgument, kInternal.
Result<std::unique_ptr<Encoder>> MakeEncoder(Compression method, int level,
                                             std::uint64_t size,
                                             int zstd_workers);

// Decodes one complete raw deflate stream, rejecting truncated data and
// bytes after the end of the stream. `size_hint` (the expected output size)
// only picks the buffer size. Untrusted input. Errors: kCorrupt, errors
// from `out`.
Status Inflate(ByteView in, std::uint64_t size_hint, const ByteSink& out);

// Decodes one or more complete zstd frames. Untrusted input.
// Errors: kCorrupt, kUnsupported (window larger than kZstdMaxWindowLog),
// errors from `out`.
Status DecompressZstd(ByteView in, std::uint64_t size_hint,
                      const ByteSink& out);

}  // namespace carton::zip_codec
