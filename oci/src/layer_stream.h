// Private: the bytes of a ModelPack layer blob as a stream (import.cc):
// the blob file as is, or gunzipped, or un-zstd'ed, each hashed as it is
// read (a tar layer's DiffID is the sha256 of its uncompressed tar).
// zlib and zstd stay in layer_stream.cc. Inputs are untrusted: a
// decompressor stops with kCorrupt at the first bad byte. Not thread-safe;
// one reader per stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"
#include "carton/manifest/sha256.h"

namespace carton::oci::internal {

enum class LayerCompression : std::uint8_t { kNone, kGzip, kZstd };

// A source of bytes read in order.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `out.size()` bytes; 0 at the end. Errors: kIoError,
  // kCorrupt (bad compressed data, named by `where`).
  virtual Result<std::size_t> Read(MutableByteView out) = 0;
};

// The file at `path` (a verified blob in the blob cache), decompressed as
// `compression` says, with the sha256 of the bytes handed out. `where`
// names the layer in messages. Errors: kIoError (cannot open).
class LayerStream : public ByteSource {
 public:
  static Result<std::unique_ptr<LayerStream>> Open(const std::string& path,
                                                   LayerCompression compression,
                                                   const std::string& where);
  // As Open, reading `fd` (from its current offset) instead.
  static Result<std::unique_ptr<LayerStream>> FromFd(UniqueFd fd, LayerCompression compression,
                                                     const std::string& where);
  // The sha256 of every byte Read() handed out; call once, at the end.
  virtual manifest::Digest FinishHash() = 0;
};

}  // namespace carton::oci::internal
