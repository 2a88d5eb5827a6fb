// Streaming codecs for zip entries: deflate and zstd encoders for ZipWriter,
// which compresses entries before libzip writes them raw, and a zstd decoder
// for ZipReader (libzip 1.7 cannot decode zstd; it decodes deflate itself).
//
// Deflate is raw (no zlib header), as zip stores it. Memory per encoder or
// decoder is bounded: a 1 MiB output buffer plus the codec's own state (zstd
// at kZipMaxZstdLevel: ~90 MiB to compress; decoding refuses windows over
// the reader's ZipReaderOptions::max_zstd_window_log).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/zip/compression.h"
#include "carton/zip/reader.h"
#include "carton/zip/writer.h"

namespace carton::zip_internal {

// Receives output bytes; an error stops the codec and is returned as is.
using ByteSink = std::function<Status(ByteView)>;

// The output buffer of a decoder: its size hint clamped to this range.
inline constexpr std::size_t kMinOutputChunk = 4096;
inline constexpr std::size_t kMaxOutputChunk = 1 << 20;

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
// it in the frame header). With `frames`, zstd output is independent frames
// of kZipFrameSize input bytes each (what CompressFrames writes on several
// threads; `zstd_workers` is then unused). Errors: kInvalidArgument,
// kInternal.
Result<std::unique_ptr<Encoder>> MakeEncoder(Compression method, int level, std::uint64_t size,
                                             int zstd_workers, bool frames = false);

// One zstd frame at a time, with ZipWriter's parameters for a level (those
// of ZstdEncoder for an input of kZipFrameSize bytes), each frame recording
// its content size. Not thread-safe: one per thread.
class ZstdFrameCompressor {
 public:
  // Errors: kInvalidArgument (level), kInternal (no memory).
  static Result<ZstdFrameCompressor> Make(int level);
  ZstdFrameCompressor(ZstdFrameCompressor&&) noexcept;
  ZstdFrameCompressor& operator=(ZstdFrameCompressor&&) noexcept;
  ~ZstdFrameCompressor();
  // `in` as one frame into `out` (resized to fit). Errors: kInternal.
  Status Compress(ByteView in, std::vector<std::byte>* out);

 private:
  struct State;
  explicit ZstdFrameCompressor(std::unique_ptr<State> s);
  std::unique_ptr<State> state_;
};

// The most bytes the frames of `size` input bytes can take.
std::uint64_t ZstdFramesBound(std::uint64_t size);

// Decodes one or more complete zstd frames fed in pieces. Untrusted input.
class ZstdDecoder {
 public:
  // `size_hint` (the expected output size) only picks the buffer size;
  // frames needing a window over 2^max_window_log bytes are refused.
  // Errors: kInternal (no memory for a context, or a window zstd refuses).
  static Result<ZstdDecoder> Make(std::uint64_t size_hint,
                                  int max_window_log = kZipMaxZstdWindowLog);

  ZstdDecoder(ZstdDecoder&&) noexcept;
  ZstdDecoder& operator=(ZstdDecoder&&) noexcept;
  ~ZstdDecoder();

  // Decodes `in`, handing output to `out`. Errors: kCorrupt, kUnsupported
  // (window larger than the limit), errors from `out`.
  Status Update(ByteView in, const ByteSink& out);
  // Errors: kCorrupt if the input was empty or ended inside a frame.
  Status Finish() const;

 private:
  struct State;
  explicit ZstdDecoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Decodes raw deflate (as zip stores it) fed in pieces, for archives read
// through a RandomAccessSource, where libzip is not used. Untrusted input;
// the caller bounds the output through `out`.
class InflateDecoder {
 public:
  // Errors: kInternal (no memory for a stream).
  static Result<InflateDecoder> Make(std::uint64_t size_hint);

  InflateDecoder(InflateDecoder&&) noexcept;
  InflateDecoder& operator=(InflateDecoder&&) noexcept;
  ~InflateDecoder();

  // Errors: kCorrupt (bad data, or bytes after the end of the stream),
  // errors from `out`.
  Status Update(ByteView in, const ByteSink& out);
  // Errors: kCorrupt if the stream did not end.
  Status Finish() const;

 private:
  struct State;
  explicit InflateDecoder(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace carton::zip_internal
