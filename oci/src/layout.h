// Private: the config blob of a carton in an OCI registry, which records how
// to rebuild the carton's zip from its blobs, and the checks that make the
// rebuild byte for byte the carton that was pushed (oci/FORMAT.md "Cartons as OCI
// artifacts").
//
// A rebuild writes the recorded entries, in the recorded order, with carton's
// ZipWriter (the recorded alignment, method, level and zstd worker mode),
// taking every file's bytes from its blob. ZipWriter's output depends on
// nothing else, so when the pushed carton was written by ZipWriter the
// rebuild is that carton. Push records `layout_sha256` only when it checked
// that it was (InferOciLayout); pull recomputes it over the rebuilt carton.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/reader.h"
#include "carton/common/status.h"
#include "carton/manifest/manifest.h"
#include "carton/zip/compression.h"
#include "carton/zip/reader.h"

namespace carton::oci::internal {

inline constexpr std::int64_t kOciLayoutVersion = 1;
// Largest config blob read.
inline constexpr std::uint64_t kMaxOciLayoutSize = std::uint64_t{64} << 20;

enum class OciEntryKind : std::uint8_t { kFile, kDirectory, kSymlink };

struct OciZipEntry {
  std::string name;
  OciEntryKind kind = OciEntryKind::kFile;
  Compression method = Compression::kStored;
  int level = 0;  // the resolved level of a compressed entry; 0 for stored
  std::uint64_t compressed_size = 0;
  // kSymlink: the entry whose bytes the link stands for (the rebuild writes
  // them as a file: ZipWriter writes no symlink entries).
  std::string target;
};

struct OciLayout {
  manifest::Digest manifest_hash{};
  std::uint32_t alignment = 64;
  // zstd through one or more worker threads (carton's writers), or on the
  // calling thread: the two give different bytes.
  bool zstd_multithreaded = true;
  // With workers: files over kZipBatchFileMax bytes compressed as
  // independent frames (ZipWriterOptions::zstd_frames), or as one.
  bool zstd_frames = true;
  std::uint64_t size = 0;  // bytes of the pushed carton
  // LayoutSha256 of the pushed carton, when ZipWriter reproduces it.
  std::optional<manifest::Digest> layout_sha256;
  std::vector<OciZipEntry> entries;  // in zip order, MANIFEST and LINKS included
  std::vector<std::string> linked;   // MANIFEST files not in the zip (LINKS)
};

// The config blob's JSON: deterministic (sorted keys, no whitespace).
std::string WriteOciLayout(const OciLayout& layout);

// Parses an untrusted config blob. Checks its own rules (names, methods,
// levels, alignment, no duplicates); the caller checks it against MANIFEST
// and the layers. Errors: kCorrupt naming the field, kUnsupported for
// another version.
Result<OciLayout> ParseOciLayout(std::string_view json);

// The layout of the carton `reader` reads, and whether ZipWriter
// reproduces it: the stored entries' data offsets must be those ZipWriter
// gives for some alignment (PlaceZipEntry), and every compressed entry must
// compress to its size at some level (ZipEntryCompressesTo: the level found
// for the previous entry of the same method, the default, then the others
// for entries up to 16 MiB). `threads` as for pack (zstd workers).
// REQUIRES: reader.Check() succeeded and the archive is mapped
// (CartonReader::Open or OpenLocal). Errors: read errors naming the entry.
Result<OciLayout> InferOciLayout(const CartonReader& reader, unsigned threads);

// The sha256 of the archive's bytes outside the data of its stored file
// entries, each left-out range replaced by its offset and length. Those
// bytes are the file's blob, checked by its own digest, so equal layout
// hashes and equal blobs mean equal archives. REQUIRES: a mapped reader
// (ZipReader::Open). Errors: kInvalidArgument (not mapped).
Result<manifest::Digest> LayoutSha256(const ZipReader& zip);

}  // namespace carton::oci::internal
