// Packing a model directory into a .carton file.
//
// Pack() walks DIR (carton.toml, model/, optional tensor_data/ and misc/),
// validates carton.toml and tensor_data/index.toml, hashes every file once
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
  // zstd where it pays; stored for files that do not shrink and for large
  // files (>= PackOptions::auto_store_size), so they stay mappable.
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
  // Used when DIR has no carton.toml: written into the packed carton. At
  // least runner_name and required_framework_version must be set then.
  std::optional<CartonConfig> config_if_missing;
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
};

// Errors: kInvalidArgument (no carton.toml and no config given, a bad flag,
// a top-level LINKS, a top-level file or directory named MANIFEST or LINKS
// in another letter case, names differing only in letter case, a symlink
// pointing outside DIR, dangling or to a directory, a socket/device/FIFO —
// each naming the path), kCorrupt (invalid carton.toml or index.toml),
// kIoError. An `out_path` inside `dir` is not packed into itself (an
// earlier output there is left out, as tar leaves out its own archive).
Result<PackReport> Pack(const std::string& dir, const std::string& out_path,
                        const PackOptions& options = {});

}  // namespace carton
