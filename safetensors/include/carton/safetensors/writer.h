// Writing safetensors, byte-compatible with the reference writer.
//
// Layout (FORMAT.md §Writing): tensors sorted by dtype (the reference's
// order: wider types first) then by name; data in that order; `__metadata__`
// first in the header with its keys sorted; the header padded with spaces so
// the data section starts at a multiple of `alignment` (8 by default, as the
// reference does).
//
// Tensor bytes come from a borrowed view or from a callback that streams
// them, so memory does not grow with tensor size. Files are written
// atomically (temporary file + rename).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/safetensors/dtype.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/tensor.h"

namespace carton::safetensors {

// Receives the next chunk of a tensor's bytes.
using ByteSink = std::function<Status(ByteView)>;
// Streams a tensor's bytes into the sink: exactly the tensor's byte size,
// in any number of chunks.
using ByteStream = std::function<Status(const ByteSink& sink)>;

struct TensorSource {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<std::uint64_t> shape;
  ByteView bytes;     // used when `stream` is empty; borrowed until written
  ByteStream stream;  // optional
};

struct WriteOptions {
  // Data section alignment in bytes: a power of two, at least 8.
  std::uint64_t alignment = 8;
  // Write `"__metadata__":{}` when the metadata is empty, as the reference
  // does for an empty map passed explicitly (metadata={} in its Python
  // API); otherwise empty metadata is left out, as when there is none.
  bool keep_empty_metadata = false;
  AtomicFileOptions file;
};

// The header (8-byte length + JSON + padding) for `tensors`, and the order
// in which their data follows. Errors: kInvalidArgument for duplicate names,
// a tensor named "__metadata__", a byte size that does not match dtype and
// shape, invalid UTF-8, a bad alignment.
struct PlannedHeader {
  std::vector<std::byte> header;
  std::vector<std::size_t> order;  // indices into `tensors`, in data order
  std::uint64_t data_size = 0;
};
Result<PlannedHeader> PlanHeader(std::span<const TensorSource> tensors, const Metadata& metadata,
                                 const WriteOptions& options = {});

// Serializes to memory.
Result<std::vector<std::byte>> Serialize(std::span<const TensorSource> tensors,
                                         const Metadata& metadata = {},
                                         const WriteOptions& options = {});

// Serializes to `path` atomically: on any error the destination is untouched.
Status WriteFile(const std::string& path, std::span<const TensorSource> tensors,
                 const Metadata& metadata = {}, const WriteOptions& options = {});

}  // namespace carton::safetensors
