// Planning a load (load.h): opening and validating every file, resolving the
// requested tensors and slices, carving the one allocation, and cutting the
// reads into pieces no larger than a staging buffer. Nothing is read but
// headers (and indexes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "carton/common/pread_file.h"
#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/safetensors/load.h"

namespace carton::safetensors::internal {

// Contiguous source bytes going to contiguous destination bytes.
struct Run {
  std::uint64_t src = 0;  // offset in the file
  std::uint64_t dst = 0;  // offset in the allocation
  std::uint64_t size = 0;
};

// One read: `size` bytes at `src` of file `file`. Without runs they are the
// destination's bytes [dst, dst + size). With runs (a slice whose pieces lie
// close together), the read covers runs[first_run, first_run + run_count),
// in source order, whose destinations are contiguous from `dst`, `out_size`
// bytes in all; every run's dst - dst <= src - this src.
struct Piece {
  std::uint32_t file = 0;
  std::uint64_t src = 0;
  std::uint64_t size = 0;
  std::uint64_t dst = 0;
  std::uint64_t out_size = 0;
  std::uint32_t first_run = 0;
  std::uint32_t run_count = 0;
};

struct LoadPlan {
  std::vector<std::shared_ptr<const RandomAccessSource>> files;
  // The sources that are PreadFiles, checked for changes after the reads.
  std::vector<std::shared_ptr<const PreadFile>> own_sources;
  std::vector<LoadedTensor> tensors;  // offsets set; addresses not yet
  std::vector<Run> runs;
  std::vector<Piece> pieces;  // by file, then offset
  std::uint64_t total = 0;    // allocation bytes, a multiple of kLoadAlignment, > 0
};

// Plans `request`; pieces are at most `piece_limit` bytes. Errors: those of
// Load (load.h) but the reads' and the target's.
Result<LoadPlan> PlanLoad(const LoadRequest& request, const LoadOptions& options,
                          std::size_t piece_limit);

// The runs of `tensor` (a view whose bytes start at `src` in its file)
// selected by `plan`, with destinations from 0. Errors: kUnsupported for a
// negative step, a sub-byte dtype not read whole, more than kMaxSliceRuns runs.
Result<std::vector<Run>> SliceRuns(const TensorView& tensor, const SlicePlan& plan,
                                   std::uint64_t src);

}  // namespace carton::safetensors::internal
