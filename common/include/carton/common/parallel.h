// ParallelFor: runs independent tasks on a few threads.
#pragma once

#include <cstddef>
#include <functional>

namespace carton {

// Runs task(i) for every i in [0, n), in index order as workers become free,
// on up to `threads` threads (0: one per core), the calling thread included.
// If threads cannot be started, fewer do the work. An exception thrown by a
// task stops new tasks from starting and is rethrown here once every thread
// has finished. Tasks must be safe to run concurrently.
void ParallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& task);

}  // namespace carton
