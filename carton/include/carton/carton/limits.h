// CartonLimits: every limit a reader of an untrusted .carton applies, in one
// place, so a caller can raise or lower any of them for Verify, ReadInfo and
// Unpack. Each field defaults to a named constant of the module that
// enforces it; docs/SECURITY.md lists them with the threat each answers.
// Plain values; thread-safe to copy.
#pragma once

#include <cstdint>

#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
#include "carton/zip/reader.h"

namespace carton {

// Largest MANIFEST read from a carton (about 300,000 files of typical path
// length), checked before it is decoded.
inline constexpr std::uint64_t kMaxManifestSize = std::uint64_t{64} << 20;

struct CartonLimits {
  ZipReaderOptions zip;  // entries, sizes, ratio (zip bombs), zstd window
  std::uint64_t max_manifest_size = kMaxManifestSize;
  ConfigLimits config;           // carton.toml
  TensorDataLimits tensor_data;  // tensor_data/index.toml and string tensors
  links::LinksLimits links;      // LINKS
};

}  // namespace carton
