// Private: a RandomAccessSource over a local file that reads with pread(2)
// and never maps it, for safe_open(..., backend="pread"): nothing of the
// file enters the process's address space but the bytes asked for.
//
// Ownership: the source owns its descriptor (closed with it).
// Thread-safety: ReadAt() may be called from several threads at once.
#pragma once

#include <memory>
#include <string>

#include "carton/common/random_access.h"
#include "carton/common/status.h"

namespace carton::python {

// Opens `path` read-only. Errors: kNotFound if it does not exist,
// kInvalidArgument if it is not a regular file, kIoError otherwise.
Result<std::unique_ptr<RandomAccessSource>> OpenPreadSource(const std::string& path);

}  // namespace carton::python
