// A RandomAccessSource over a local file read with pread(2), never mapped,
// that can tell whether the file changed since it was opened.
#pragma once

#include <memory>
#include <string>

#include "carton/common/random_access.h"
#include "carton/common/status.h"

namespace carton::safetensors::internal {

class PreadSource : public RandomAccessSource {
 public:
  // Errors: kNotFound, kInvalidArgument (not a regular file), kIoError.
  static Result<std::shared_ptr<PreadSource>> Open(const std::string& path);

  virtual ~PreadSource() = default;
  // kIoError "<path>: changed while loading (...)" when the file's size,
  // modification time or inode differ from those seen when it was opened.
  virtual Status CheckUnchanged() const = 0;
};

}  // namespace carton::safetensors::internal
