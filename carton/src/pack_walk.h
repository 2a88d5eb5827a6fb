// Private: lists the files of a model directory for packing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/status.h"

namespace carton::internal {

struct SourceFile {
  std::string path;       // relative, '/'-separated: the entry name
  std::string full_path;  // where to read it (a symlink's target)
  std::uint64_t size = 0;
};

// Every regular file below `dir`, sorted by the bytes of `path`. Symlinks
// to files inside `dir` are followed; symlinks pointing outside, symlinks to
// directories, sockets, FIFOs and devices are refused (kInvalidArgument
// naming the path). Directories with no files leave no trace. A top-level
// MANIFEST is skipped (it is regenerated); a top-level LINKS is refused, and
// so is any other top-level file or directory named MANIFEST or LINKS in
// some letter case. The file at `skip` (the archive being written, when
// it lies inside `dir`, as tar skips its own archive) is left out.
Result<std::vector<SourceFile>> WalkModelDir(const std::string& dir, const std::string& skip = "");

}  // namespace carton::internal
