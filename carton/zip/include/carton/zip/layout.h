// How ZipWriter lays out an archive, for code that must tell whether an
// archive is ZipWriter's output and with which settings, so that it can be
// rebuilt byte for byte from its entries' bytes (carton's OCI artifacts,
// oci/FORMAT.md "Cartons as OCI artifacts"): where ZipWriter puts each entry's data,
// which compression levels it accepts, the entry name rules it and
// ZipReader apply, and trial compression of an entry with ZipWriter's own
// encoders.
//
// ZipWriter computes its offsets with PlaceZipEntry and PlaceZipDirectory,
// so a prediction made here is the writer's arithmetic, not a copy of it.
//
// Thread-safety: pure functions, except ZipEntryCompressesTo, which is as
// thread-safe as ZipReader's const methods.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/zip/compression.h"
#include "carton/zip/reader.h"

namespace carton {

// nullopt when `name` is an entry name ZipReader accepts and ZipWriter
// writes (the rules in reader.h; a trailing '/' marks a directory);
// otherwise why not, as a phrase: "is empty", "is absolute", "has a \"..\"
// component", ...
std::optional<std::string> ZipEntryNameProblem(std::string_view name);

// `name` in double quotes, with bytes outside printable ASCII (and all
// non-ASCII bytes when `name` is not valid UTF-8) as \xNN: how the zip
// module names entries in messages.
std::string QuoteZipEntryName(std::string_view name);

// The level ZipWriter compresses with for `method` when given `level`:
// 0 means the method's default (deflate 6, zstd 2); stored is always 0.
// Errors: kInvalidArgument for a level the method does not have (deflate
// 1..9, zstd ZSTD_minCLevel()..kZipMaxZstdLevel).
Result<int> ResolveZipLevel(Compression method, int level);

// Where ZipWriter writes one file entry whose local header starts at a
// given offset.
struct ZipEntryPlacement {
  // Bytes of the alignment extra field (id 0xD935) in the local header;
  // 0 when there is none. Only stored entries are aligned.
  std::uint64_t alignment_field = 0;
  // Offset of the entry's first data byte.
  std::uint64_t data_offset = 0;
  // Offset of the next entry's local header (after this entry's data).
  std::uint64_t next_header = 0;
};

// The placement ZipWriter gives a file entry with a name of `name_size`
// bytes, `size` bytes decoded and `compressed_size` in the archive, whose
// local header starts at `header_offset`, in an archive written with
// ZipWriterOptions::alignment `alignment` (a power of two; 1 or 0 aligns
// nothing). The local header is 30 bytes, the name, a zip64 field when a
// size reaches 0xFFFFFFFF, then, for stored entries, the alignment field.
ZipEntryPlacement PlaceZipEntry(std::uint64_t header_offset, std::size_t name_size,
                                Compression method, std::uint64_t size,
                                std::uint64_t compressed_size, std::uint32_t alignment);

// The offset of the local header after a directory entry with a name of
// `name_size` bytes (its trailing '/' included) whose header starts at
// `header_offset`: directories have no data and are never aligned.
std::uint64_t PlaceZipDirectory(std::uint64_t header_offset, std::size_t name_size);

// Whether ZipWriter, given the decoded bytes of `entry` (an entry of `zip`)
// with `method` (kDeflate or kZstd) at `level` (as for ZipWriter::AddFile)
// and `zstd_workers` (as ZipWriterOptions::zstd_workers), writes exactly
// entry.compressed_size bytes; with `frames`, as AddFile does with
// ZipWriterOptions::file_threads and zstd_frames (a zstd entry over
// kZipBatchFileMax bytes as frames of kZipFrameSize). Compresses with ZipWriter's encoders and
// stops as soon as the output is longer; false when the method or level is
// not one ZipWriter can write. Reads `entry` (untrusted; its CRC-32 is
// checked when the whole entry is read). Errors: those of
// ZipReader::ReadTo; kInternal when the encoder fails.
Result<bool> ZipEntryCompressesTo(const ZipReader& zip, const ZipEntry& entry, Compression method,
                                  int level, int zstd_workers, bool frames = false);

}  // namespace carton
