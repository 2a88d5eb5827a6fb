// Running a load plan (load_plan.h) into a target (load_target.h): reader
// threads take pieces in file order; a host target's pieces are read
// straight into the destination, others into staging buffers from a
// bounded pool whose copies run while the next reads go on.
#pragma once

#include <cstddef>

#include "carton/common/status.h"
#include "load_plan.h"
#include "load_target.h"

namespace carton::safetensors::internal {

struct PipelineOptions {
  unsigned threads = 1;
  std::size_t buffer_size = 0;  // >= the largest piece
  unsigned buffers = 1;
  unsigned streams = 1;
  // Read into target.host_destination() directly (host targets only).
  bool direct = false;
};

// Reads every piece of `plan` into `target` and waits for every copy. The
// first error stops new reads; the rest finish before it is returned.
// REQUIRES: target.Allocate(plan.total) succeeded.
Status RunPipeline(const LoadPlan& plan, CopyTarget& target, const PipelineOptions& options);

}  // namespace carton::safetensors::internal
