// PreadFile: a RandomAccessSource (random_access.h) over a local file read
// with pread(2) and never mapped, so nothing of the file enters the
// process's address space but the bytes asked for. It remembers the file's
// device, inode, size and modification time when opened and can tell
// afterwards whether they changed, so a reader can refuse bytes that may mix
// two versions of a file. (A writer that puts the modification time back
// goes unseen: the change time, which would show it, also moves when the
// file is linked, renamed or unlinked while its bytes stay the same.)
//
// Ownership: owns its descriptor, closed with it.
// Thread-safety: ReadAt and CheckUnchanged may be called from several
// threads at once.
#pragma once

#include <memory>
#include <string>

#include "carton/common/file_identity.h"
#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"

namespace carton {

class PreadFile final : public RandomAccessSource {
 public:
  // Opens `path` read-only. Errors: kNotFound, kInvalidArgument (not a
  // regular file), kIoError.
  static Result<std::shared_ptr<PreadFile>> Open(const std::string& path);

  // The size when opened.
  std::uint64_t size() const override { return identity_.size; }
  const std::string& name() const override { return path_; }
  // Reads exactly out.size() bytes at `offset`, retrying interrupted and
  // partial reads. Errors: kInvalidArgument (past the size when opened);
  // kIoError for a failed read, or "<path>: short read: ..." when the file
  // has shrunk since it was opened.
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override;
  // kIoError "<path>: changed while loading (...)" when the file's device,
  // inode, size or modification time differ from those it had when opened.
  Status CheckUnchanged() const;

  // Use Open; public for std::make_shared.
  PreadFile(std::string path, UniqueFd fd, FileIdentity identity);

 private:
  std::string path_;
  UniqueFd fd_;
  FileIdentity identity_;
};

}  // namespace carton
