// A carton's metadata as `carton info` shows it: carton.toml, the manifest
// hash, the files and the tensor index (read by CartonSource::Info,
// source.h: only the central directory, carton.toml, MANIFEST and
// tensor_data/index.toml, by range requests for a URL).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/reader.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/manifest/sha256.h"

namespace carton {

struct CartonFileInfo {
  std::string path;
  std::uint64_t size = 0;
  std::uint64_t compressed_size = 0;
  std::string method;   // "stored", "deflate", "zstd"; "linked" when not in the zip
  bool linked = false;  // listed in MANIFEST, fetched through LINKS
};

struct CartonInfo {
  CartonConfig config;
  manifest::Digest manifest_hash{};
  std::vector<CartonFileInfo> files;  // MANIFEST order; MANIFEST and LINKS excluded
  std::optional<TensorDataIndex> tensor_index;
  bool has_links = false;
};

// The metadata of a checked carton (CartonReader::Check has succeeded):
// carton.toml, the manifest hash, the files in MANIFEST order (their sizes
// and methods from the zip, "linked" for files LINKS covers) and the tensor
// index. The operation `carton info` runs is CartonSource::Info (source.h),
// which reads only what this needs.
CartonInfo InfoOf(const CartonReader& checked);

}  // namespace carton
