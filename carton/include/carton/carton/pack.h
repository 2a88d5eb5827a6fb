// Packing a model into a .carton file.
//
// Pack() takes a folder in the carton layout (model/, carton.toml,
// optional tensor_data/ and misc/), any other folder (its files go under
// model/, but for carton.toml), or a single file (model/<its name>). It validates carton.toml and
// tensor_data/index.toml and runs every consistency check verify runs
// (references, declared names, tensor sizes) before writing a byte, hashes
// every file once
// (in the pass that compresses it; stored files on other threads while the
// archive is written, which reads each once more), writes MANIFEST, and
// writes the zip atomically: on any error nothing is left at the destination. Entries come
// in a fixed order (sorted by path, MANIFEST last) with fixed timestamps, so
// the same directory always gives a byte-identical .carton.
//
// Thread-safety: Pack() may run concurrently on different outputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/compression.h"

namespace carton {

enum class PackCompression : std::uint8_t {
  kStored,
  kDeflate,
  kZstd,
  // zstd where it pays; stored for files under 4 KiB (so carton.toml and
  // MANIFEST open with any zip tool), files that zstd does not shrink by at
  // least 10%, and large files (>= PackOptions::auto_store_size), so they
  // stay mappable.
  kAuto,
};

struct PackOptions {
  PackCompression compression = PackCompression::kAuto;
  int level = 0;  // 0: the method's default (deflate 6, zstd 2)
  std::uint32_t alignment = 64;
  std::uint64_t auto_store_size = std::uint64_t{16} << 20;
  // Threads for hashing stored files and for zstd (0: one per core). The
  // output is the same for every value.
  unsigned threads = 0;
  // Used when the path has no carton.toml: written into the packed carton.
  // At least runner_name and required_framework_version must be set then.
  std::optional<CartonConfig> config_if_missing;
  // Written in place of the path's carton.toml, if it has one (the CLI's
  // --override: the file's values with the flags' on top).
  std::optional<CartonConfig> config_override;
  // Files and directories left out, besides those of PATH/.cartonignore
  // (one glob per line, # comments) and the defaults (.git/, __pycache__/,
  // .DS_Store). fnmatch(3) globs: a glob without '/' matches a name at any
  // depth; one with '/' (or starting with '/') matches the path from PATH;
  // a trailing '/' matches directories only. .cartonignore itself is not
  // packed.
  std::vector<std::string> exclude;
  // If set, called with the bytes of the model's files read so far and
  // their total, as they are written.
  ProgressFn progress;
};

struct PackedFile {
  std::string path;
  std::uint64_t size = 0;
  std::uint64_t compressed_size = 0;
  Compression method = Compression::kStored;
  manifest::Digest sha256{};
};

struct PackReport {
  std::vector<PackedFile> files;  // in archive order, MANIFEST excluded
  manifest::Digest manifest_hash{};
  // What the default exclusions left out, relative to the path ("a/.git/").
  std::vector<std::string> skipped_by_default;
  // carton.toml keys that spec v1 does not define (packed, ignored by
  // readers), one line each with a "did you mean" for near misses.
  std::vector<std::string> warnings;
};

// Errors: kInvalidArgument (no carton.toml and no config given, a bad
// option or glob, an output path that is a directory), kNotFound (no such
// path, or the output's directory is missing), kIoError (the output's
// directory cannot be written; checked before any work, so the message
// names `out_path`), kUnsupported (content a carton cannot carry: no file
// for model/, a top-level LINKS, a top-level file or directory named
// MANIFEST or LINKS in another letter case, names differing only in letter
// case, a dangling symlink or one to a directory, a socket/device/FIFO —
// each naming the path), kCorrupt (invalid carton.toml or index.toml, or
// what verify would report: a reference to a missing tensor or misc file,
// an undeclared input or output name, a tensor file of the wrong size; one
// line per problem, "<path>/carton.toml:12:1: self-test 1 inputs: ...").
// An `out_path` inside the folder is not packed into itself (an earlier
// output there is left out, as tar leaves out its own archive).
Result<PackReport> Pack(const std::string& path, const std::string& out_path,
                        const PackOptions& options = {});

}  // namespace carton
