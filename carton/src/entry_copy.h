// Private: copying entries from one carton into a new one (Shrink and
// FetchLinked), checking each file's sha256 against MANIFEST on the way.
#pragma once

#include <string>
#include <vector>

#include "carton/carton/reader.h"
#include "carton/common/status.h"
#include "carton/common/temporaries.h"
#include "carton/manifest/manifest.h"
#include "carton/zip/writer.h"

namespace carton::internal {

// Entries up to this size are decoded into memory; larger compressed ones
// go through a temporary file.
inline constexpr std::uint64_t kCopyInMemory = 64ull << 20;

// Copies entries of `from` (whose MANIFEST has been read) into `to`.
// Temporary files live in `spool_dir` until the copier is destroyed, which
// must be after to.Finish().
class EntryCopier {
 public:
  EntryCopier(const CartonReader& from, ZipWriter& to, std::string spool_dir)
      : from_(from), to_(to), spool_dir_(std::move(spool_dir)) {}
  EntryCopier(const EntryCopier&) = delete;
  EntryCopier& operator=(const EntryCopier&) = delete;
  ~EntryCopier();

  // Copies file entry `name` with its own compression method; its decoded
  // bytes must have the sha256 MANIFEST gives it. A symlink entry is copied
  // as a file holding its target's bytes (its MANIFEST line already has
  // their sha256), so the new carton has no symlink entries. Errors:
  // kCorrupt (mismatch or bad data, naming the entry), kUnsupported
  // (method), kIoError.
  Status Copy(const std::string& name);

 private:
  const CartonReader& from_;
  ZipWriter& to_;
  std::string spool_dir_;
  std::vector<std::string> spooled_;
  std::vector<TemporaryPath> registrations_;
};

}  // namespace carton::internal
