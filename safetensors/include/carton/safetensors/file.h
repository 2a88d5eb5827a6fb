// Reading safetensors: a validated, zero-copy view of a file or buffer, or
// the validated header of a file read through a RandomAccessSource.
//
// File::Open maps the file read-only and parses only the header; tensor
// bytes are touched when the caller reads them. File::OpenSource reads only
// the 8-byte length and the header from a source (a local file, a zip
// entry, a remote file read by HTTP range requests) and reads tensor bytes
// when asked (ReadRange, ReadInto, ReadTensor). Input is untrusted: every
// rule of FORMAT.md is checked, by the same code for every kind of input,
// before a File is returned, so every TensorView it hands out is in bounds,
// correctly sized and non-overlapping. Errors are kCorrupt (kUnsupported
// for an unknown dtype, kNotFound/kIoError/kNetworkError for the file or
// source itself) with an ErrorKind in Status::detail() (errors.h).
//
// Ownership: a File owns its mapping (or buffer, or header and a share of
// its source, or borrows the caller's buffer for FromBuffer); names, shapes
// and bytes of its TensorViews borrow from it and stay valid while the File
// lives, including after it is moved.
// Thread-safety: a File is immutable after construction; const methods may
// be called concurrently (reads from a source are as thread-safe as the
// source's ReadAt, which RandomAccessSource requires to be).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/safetensors/dtype.h"
#include "carton/safetensors/errors.h"
#include "carton/safetensors/tensor.h"

namespace carton::safetensors {

// The header length limit of the format (100 MB), checked before any
// allocation.
inline constexpr std::uint64_t kMaxHeaderSize = 100'000'000;
// JSON nesting limit. A valid header needs 3 (object, entry, shape array).
inline constexpr std::size_t kMaxJsonDepth = 16;

// File::OpenSource reads the first min(size, kHeaderProbeSize) bytes of a
// source, then the rest of the header when it is longer: one read for most
// headers, two for any. A source that fetches (HTTP) should fetch at least
// this much on its first request.
inline constexpr std::uint64_t kHeaderProbeSize = 64 << 10;

// Largest sharded index file (model.safetensors.index.json) accepted,
// checked before parsing. Real indexes are a few hundred kilobytes.
inline constexpr std::uint64_t kMaxIndexFileSize = 100'000'000;

struct ReaderOptions {
  std::uint64_t max_header_size = kMaxHeaderSize;
  std::size_t max_json_depth = kMaxJsonDepth;
  // ShardedFile::Open only.
  std::uint64_t max_index_file_size = kMaxIndexFileSize;
  // Validate with the complete validator only. Headers of the usual shape
  // are read by a faster one that enforces the same rules and gives the
  // same result; this switch exists to test that (fuzz/), at ~3x the cost.
  bool skip_fast_path = false;
};

using Metadata = std::map<std::string, std::string, std::less<>>;

class File {
 public:
  // Maps `path` and validates it. The returned File keeps the mapping.
  static Result<File> Open(const std::string& path, const ReaderOptions& options = {});
  // Validates `bytes` without copying them. REQUIRES: `bytes` outlive the
  // File and every view taken from it.
  static Result<File> FromBuffer(ByteView bytes, const ReaderOptions& options = {});
  // Validates and takes ownership of `bytes`.
  static Result<File> FromOwnedBuffer(std::vector<std::byte> bytes,
                                      const ReaderOptions& options = {});
  // Reads the length and the header from `source` (at most two reads, see
  // kHeaderProbeSize) and validates them against source->size(), by every
  // rule of FORMAT.md. Tensor bytes stay in the source: the views'
  // `data` is empty (use TensorView::byte_size() and ReadRange). The File
  // keeps `source`. Errors: those of File::Open, with source->name(), and
  // the source's own (kIoError, kNetworkError).
  static Result<File> OpenSource(std::shared_ptr<const RandomAccessSource> source,
                                 const ReaderOptions& options = {});

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  // Tensors in the order of their data (by data_offsets).
  std::span<const TensorView> tensors() const;
  std::size_t size() const { return tensors().size(); }
  // Tensor names, sorted by their bytes.
  std::vector<std::string_view> Names() const;
  // nullptr if there is no tensor `name`.
  const TensorView* Find(std::string_view name) const;
  // The tensor `name`, or kNotFound naming it and the file.
  Result<TensorView> Get(std::string_view name) const;

  // The `__metadata__` map (empty when absent).
  const Metadata& metadata() const;
  bool has_metadata() const;

  // N, the header length field (including padding).
  std::uint64_t header_size() const;
  // Start of the data section in the file: 8 + N.
  std::uint64_t data_start() const { return 8 + header_size(); }
  // Size of the whole file (header and data).
  std::uint64_t file_size() const;
  // True when the tensor bytes are in memory (Open, FromBuffer,
  // FromOwnedBuffer): views carry `data`. False for OpenSource.
  bool data_in_memory() const;
  // The whole file (header and data), borrowed from this File; empty when
  // !data_in_memory().
  ByteView bytes() const;
  // For a File from Open: maps the pages of `tensor` (or of every tensor)
  // now, in one call, rather than a page fault at a time as they are read.
  // No-op for other Files. Measured on a 1 GiB file read whole right after
  // (docs/BENCHMARKS.md, safetensors): never faster here, warm or cold
  // pages (0.99-1.01x the plain read on one day, 0.75x warm and 0.90x cold
  // on another): nothing in carton calls it. It only moves the faults
  // earlier, e.g. before a latency-sensitive pass.
  Status Populate() const;
  Status Populate(const TensorView& tensor) const;

  // Copies bytes [offset, offset + out.size()) of `tensor` (a view from this
  // File: its name and offset must match one) into `out`. For a File from
  // Open this reads the file with pread(2) instead of touching the mapping:
  // the faster way to get bytes that will be copied anyway (into a
  // framework's tensor, a device staging buffer); for OpenSource, it is one
  // source read (one range request over HTTP). Errors: kInvalidArgument (not
  // this File's tensor, or out of range), kIoError, kNetworkError.
  Status ReadRange(const TensorView& tensor, std::uint64_t offset, MutableByteView out) const;
  // ReadRange of the whole tensor; `out` must be exactly byte_size() bytes.
  Status ReadInto(const TensorView& tensor, MutableByteView out) const;
  // The tensor `name` as an owned Tensor (its bytes read with ReadInto).
  // Errors: kNotFound, those of ReadInto, kInvalidArgument if its size
  // cannot be allocated.
  Result<Tensor> ReadTensor(std::string_view name) const;

  // The path given to Open, the source's name (OpenSource), or "<buffer>".
  const std::string& source() const;

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  static Result<File> Build(std::unique_ptr<Impl> impl, const ReaderOptions& options);
  Status Read(std::uint64_t file_offset, MutableByteView out) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton::safetensors
