// Shared by the load tests: checkpoints written at test time (a tensor of
// every dtype, shards), the mapped reader's bytes to compare with, and the
// stand-in CUDA driver (tests/gpu/fake_cuda.cc) with its allocation log.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "carton/safetensors/load.h"
#include "testing.h"

namespace carton::safetensors::testing {

using carton::testing::TempDir;

// Writes a file holding one tensor of every dtype (named after it, e.g.
// "BF16"; sub-byte ones sized to whole bytes), a 0-rank "scalar", an empty
// "empty" [0, 3] and a "matrix" F32 [64, 48] and "cube" BF16 [6, 10, 12],
// all with pseudo-random bytes from `seed`.
void WriteEveryDtype(const std::string& path, std::uint64_t seed);

// Writes dir/model.safetensors.index.json over two shards holding the
// tensors of WriteEveryDtype (split by name) and returns the index's path.
std::string WriteShards(const TempDir& dir);

// The bytes the mapped reader (File::Open, ShardedFile::Open for a .json)
// gives for `name` in `path`, sliced by `slice` (ReadSlice) when not empty.
std::vector<std::byte> MappedBytes(const std::string& path, const std::string& name,
                                   const std::string& slice = "");

// Checks every loaded tensor: its bytes (copied back from a GPU) equal the
// mapped reader's for the slice that was requested (`slices`, by name),
// its offset is aligned, its address is the allocation's plus the offset.
void CheckAgainstMapped(const LoadedTensors& loaded, const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& slices = {});

// A request for `names`, each with its slice text ("" for whole).
LoadRequest RequestOf(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& names);

// The default opener, but each source's `fail_at`-th read (counting from
// 1; the first is the header's) fails with kIoError "<path>: read failed:
// Input/output error": the injected I/O error.
SourceOpener FailingOpener(int fail_at);

// Points CARTON_LIBCUDA at the built fake driver (before its first use in
// this process) and sets FAKE_CUDA_LOG to a fresh file in `dir`, which it
// returns.
std::string UseFakeCuda(const TempDir& dir);

// Counts of the fake driver's log lines: device allocations and frees,
// pinned allocations and frees.
struct DriverLog {
  int alloc = 0, free = 0, hostalloc = 0, hostfree = 0;
};
DriverLog ReadDriverLog(const std::string& path);

using carton::testing::ScopedEnv;

}  // namespace carton::safetensors::testing
