// Reading safetensors: a validated, zero-copy view of a file or buffer.
//
// File::Open maps the file read-only and parses only the header; tensor
// bytes are touched when the caller reads them. Input is untrusted: every
// rule of FORMAT.md is checked before a File is returned, so every
// TensorView it hands out is in bounds, correctly sized and non-overlapping.
// Errors are kCorrupt (kUnsupported for an unknown dtype, kNotFound/kIoError
// for the file itself) with an ErrorKind in Status::detail() (errors.h).
//
// Ownership: a File owns its mapping (or buffer, or borrows the caller's for
// FromBuffer); names, shapes and bytes of its TensorViews borrow from it and
// stay valid while the File lives, including after it is moved.
// Thread-safety: a File is immutable after construction; const methods may
// be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
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

// Largest sharded index file (model.safetensors.index.json) accepted,
// checked before parsing. Real indexes are a few hundred kilobytes.
inline constexpr std::uint64_t kMaxIndexFileSize = 100'000'000;

struct ReaderOptions {
  std::uint64_t max_header_size = kMaxHeaderSize;
  std::size_t max_json_depth = kMaxJsonDepth;
  // ShardedFile::Open only.
  std::uint64_t max_index_file_size = kMaxIndexFileSize;
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
  // The whole file (header and data), borrowed from this File.
  ByteView bytes() const;
  // For a File from Open: maps the pages of `tensor` (or of every tensor)
  // now, in one call, rather than a page fault at a time as they are read.
  // Worth calling before reading most of the bytes. No-op for buffers.
  Status Populate() const;
  Status Populate(const TensorView& tensor) const;

  // Copies the bytes of `tensor` (a view from this File) into `out`, which
  // must be exactly tensor.data.size() bytes. For a File from Open this
  // reads the file with pread(2) instead of touching the mapping: the
  // faster way to get bytes that will be copied anyway (into a framework's
  // tensor, a device staging buffer). Errors: kInvalidArgument, kIoError.
  Status ReadInto(const TensorView& tensor, MutableByteView out) const;

  // The path given to Open, or "<buffer>".
  const std::string& source() const;

 private:
  struct Impl;
  explicit File(std::unique_ptr<Impl> impl);
  static Result<File> Build(std::unique_ptr<Impl> impl, const ReaderOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace carton::safetensors
