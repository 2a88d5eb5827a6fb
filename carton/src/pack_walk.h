// Private: lists the files of the path given to Pack() and the entry name
// each one gets.
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

struct WalkOptions {
  // The archive being written: left out when it lies inside the folder,
  // as tar leaves out its own archive.
  std::string skip;
  // Globs of files and directories to leave out (pack.h, PackOptions::exclude),
  // added to those of PATH/.cartonignore and the defaults.
  std::vector<std::string> exclude;
};

struct WalkResult {
  std::vector<SourceFile> files;  // sorted by the bytes of `path`
  // What the default rules left out (".git/", "a/__pycache__/", ".DS_Store"),
  // as paths relative to PATH; directories end in '/'.
  std::vector<std::string> skipped_by_default;
  bool has_config = false;   // PATH is a folder holding carton.toml
  bool single_file = false;  // PATH is one file (model/<its name>)
};

// The files of `path`, named as in the carton:
//   - a folder with a model/ directory (the carton layout): its files keep
//     their relative paths;
//   - any other folder: its files go under model/, but for carton.toml and
//     the top-level tensor_data/ and misc/ folders, which stay the carton's
//     (the layout `carton init` writes beside the model's files);
//   - a single file: model/<its name>.
// Symlinks are followed: to a file inside the folder (read from there), or
// to a file outside it (packed as that file, as zip does; Hugging Face
// cache snapshots are such links). Symlinks to directories, dangling
// symlinks, sockets, FIFOs and devices are refused, and so are names that
// differ only in letter case (kUnsupported naming the path). Directories
// with no files leave no trace. In the carton layout a top-level MANIFEST is
// skipped (it is regenerated); a top-level LINKS is refused, and so is any
// other top-level file or directory named MANIFEST or LINKS in some letter
// case. Errors: kNotFound (no `path`), kUnsupported (content a carton cannot
// carry), kInvalidArgument (a bad glob), kIoError.
Result<WalkResult> WalkModelPath(const std::string& path, const WalkOptions& options = {});

}  // namespace carton::internal
