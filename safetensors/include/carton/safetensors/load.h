// Loading safetensors tensors into host or GPU memory in one pass, and
// handing them out as DLPack.
//
// Load reads files, sharded checkpoints (their index.json) or a chosen set
// of tensors, whole or sliced (slice.h: e.g. one tensor-parallel rank's rows
// or columns), into ONE allocation on the target, carved into tensors at
// kLoadAlignment-byte offsets. Files are read with pread(2), never through a
// memory mapping, on several threads. For a GPU the reads fill a bounded
// pool of page-locked staging buffers whose copies to the device run on
// several streams while the next reads go on; a buffer is reused only once
// its copy has completed (an event per buffer). For host memory the reads go
// straight into the destination. Every header is validated (file.h, the
// rules of FORMAT.md) before any tensor byte is read, and every read stays
// within a validated tensor.
//
// Input is untrusted. Errors (every one frees all it allocated; nothing is
// returned half loaded):
//   kNotFound         a file, or a requested tensor, does not exist;
//   kInvalidArgument  a bad request (a tensor named twice, a bad slice, a
//                     tensor in two files, bad options);
//   kCorrupt          a file or an index breaks the format (safetensors
//                     ErrorKind in detail());
//   kUnsupported      a slice Load cannot read (negative steps, a sub-byte
//                     dtype sliced, too many separate runs), no CUDA driver;
//   kIoError          a failed or short read (a file truncated or changed
//                     while loading), a driver failure, a device out of
//                     memory ("cuda:0: out of memory allocating ...").
//
// Ownership: LoadedTensors owns the allocation (shared, see below); a
// LoadedTensor's `address` is valid while the LoadedTensors or any DLPack
// tensor made from it lives. Every DLPack tensor exported from a
// LoadedTensors shares that one allocation: it is freed (cuMemFree for a
// GPU, including the retained device context) when the LoadedTensors and
// every exported tensor's deleter have all run, on whichever thread runs
// last; neither Load nor a deleter changes that thread's current CUDA
// context. An exported tensor does not own its own copy: writes through it are
// seen by every other export of the same tensor.
//
// Thread-safety: Load may be called from several threads at once. A
// LoadedTensors is immutable after Load; its const methods (ToDLPack
// included) may be called concurrently; a DLPack deleter may run on any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/safetensors/dlpack.h"
#include "carton/safetensors/dtype.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/slice.h"

namespace carton::safetensors {

// Each tensor starts at a multiple of this many bytes from the start of the
// allocation (which is itself so aligned): what DLPack asks of CUDA data.
inline constexpr std::uint64_t kLoadAlignment = 256;
// A slice that needs more separate reads than this is refused (kUnsupported).
inline constexpr std::uint64_t kMaxSliceRuns = std::uint64_t{1} << 20;

// Where the tensors go.
struct Target {
  enum class Kind : std::uint8_t { kHost, kCuda };
  Kind kind = Kind::kHost;
  int index = 0;  // the GPU's ordinal for kCuda (gpu.h); 0 for kHost

  static Target Host() { return {Kind::kHost, 0}; }
  static Target Cuda(int index) { return {Kind::kCuda, index}; }
  // "cpu", "cuda:0"
  std::string ToString() const;
};

// One tensor to load, whole (an empty slice) or sliced.
struct TensorRequest {
  std::string name;
  std::vector<SliceIndex> slice;  // slice.h; positive steps only
};

struct LoadRequest {
  // safetensors files, and sharded checkpoints by their index (a path ending
  // in ".json", shards beside it). A tensor name may appear in only one.
  std::vector<std::string> paths;
  // The tensors to load, in this order; absent: every tensor of every path,
  // by name.
  std::optional<std::vector<TensorRequest>> tensors;
};

// Opens a file for reading: the I/O seam (tests inject failing sources;
// callers may read from elsewhere). The default reads the file with
// pread(2) and checks afterwards that it was not changed while loading.
// The shards of a sharded checkpoint are opened on several threads at once,
// so an opener must be safe to call concurrently.
using SourceOpener =
    std::function<Result<std::shared_ptr<const RandomAccessSource>>(const std::string& path)>;

// The default opener: reads `path` with pread(2), never mapped. A load
// checks each source it returns, once the reads are done, for a change in
// size, modification time or inode since it was opened (kIoError "changed
// while loading"). Errors: kNotFound, kInvalidArgument (not a regular
// file), kIoError.
Result<std::shared_ptr<const RandomAccessSource>> OpenPreadFile(const std::string& path);

struct LoadOptions {
  // Reader threads (pread); 0: min(8, cores).
  unsigned threads = 0;
  // GPU: page-locked staging buffers, each `staging_buffer_size` bytes; at
  // most `staging_buffers` (0: threads + 2) exist at once, fewer when the
  // load is smaller. Host memory used is about their product.
  std::size_t staging_buffer_size = std::size_t{32} << 20;
  unsigned staging_buffers = 0;
  // GPU: copy streams, used round robin by the staging buffers.
  unsigned streams = 4;
  // Host target only: go through staging buffers as a GPU load does (reads
  // into a staging buffer, then a copy), instead of reading straight into
  // the destination. For tests and comparisons.
  bool host_staged = false;
  ReaderOptions reader;
  SourceOpener open;  // empty: the default
};

// One loaded tensor.
struct LoadedTensor {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<std::uint64_t> shape;  // after slicing
  std::uint64_t byte_size = 0;
  std::uint64_t offset = 0;   // from the start of the allocation
  std::uint64_t address = 0;  // of its first byte: a host pointer, or a CUdeviceptr
  std::string file;           // the path it was read from
};

struct DLPackOptions {
  // Versioned export only: set DLPACK_FLAG_BITMASK_READ_ONLY (the consumer
  // must not write; numpy then makes a read-only array).
  bool read_only = false;
};

namespace internal {
struct LoadedMemory;
}

class LoadedTensors {
 public:
  LoadedTensors(LoadedTensors&&) noexcept;
  LoadedTensors& operator=(LoadedTensors&&) noexcept;
  ~LoadedTensors();

  const Target& target() const { return target_; }
  // In request order (or by name when every tensor was loaded).
  std::span<const LoadedTensor> tensors() const { return tensors_; }
  // nullptr if no tensor `name` was loaded.
  const LoadedTensor* Find(std::string_view name) const;
  // Bytes of the one allocation (at least kLoadAlignment).
  std::uint64_t allocation_size() const;

  // Host target: the tensor's bytes, borrowed from this object. Empty for a
  // GPU target.
  std::span<const std::byte> HostBytes(const LoadedTensor& tensor) const;
  // The tensor's bytes copied to host memory (for either target; a GPU
  // copies synchronously). Errors: kIoError from the driver.
  Result<std::vector<std::byte>> CopyToHost(const LoadedTensor& tensor) const;

  // The tensor `name` as DLPack, sharing the allocation (see the header
  // comment). dtype: DtypeToDLPack; shape as loaded; strides: C order, in
  // elements; byte_offset 0 (`data` is the tensor's first byte, 256-byte
  // aligned); device kDLCPU/0 or kDLCUDA/index. Versioned: version 1.1;
  // flags 0, or READ_ONLY as asked (never IS_COPIED: the memory is shared).
  // The caller passes the struct to one consumer, or calls its deleter.
  // Errors: kNotFound.
  Result<dlpack::DLManagedTensor*> ToDLPack(std::string_view name) const;
  Result<dlpack::DLManagedTensorVersioned*> ToDLPackVersioned(
      std::string_view name, const DLPackOptions& options = {}) const;

 private:
  friend Result<LoadedTensors> Load(const LoadRequest& request, const Target& target,
                                    const LoadOptions& options);
  LoadedTensors(Target target, std::vector<LoadedTensor> tensors,
                std::shared_ptr<internal::LoadedMemory> memory);
  Target target_;
  std::vector<LoadedTensor> tensors_;
  std::shared_ptr<internal::LoadedMemory> memory_;
};

// The DLPack type of a safetensors dtype. Every dtype has one in DLPack 1.1:
// BOOL kDLBool/8; U*/I* kDLUInt/kDLInt; F16/F32/F64 kDLFloat; BF16
// kDLBfloat/16; C64 kDLComplex/64; F8_E5M2 kDLFloat8_e5m2; F8_E4M3
// kDLFloat8_e4m3fn (the type torch and ml_dtypes call float8_e4m3fn);
// F8_E4M3FNUZ, F8_E5M2FNUZ, F8_E8M0 the fnuz/e8m0fnu codes; F6_E2M3,
// F6_E3M2 kDLFloat6_*/6 and F4 kDLFloat4_e2m1fn/4, packed as safetensors
// stores them. Lanes are 1. A consumer older than DLPack 1.1 refuses the
// FP8/FP6/FP4 codes rather than misreading them.
dlpack::DLDataType DtypeToDLPack(Dtype dtype);

// Loads `request` into `target`. See the header comment for what is read,
// when, and the errors. Takes untrusted files.
Result<LoadedTensors> Load(const LoadRequest& request, const Target& target,
                           const LoadOptions& options = {});

}  // namespace carton::safetensors
