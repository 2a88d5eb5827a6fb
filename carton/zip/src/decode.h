// Private: the one loop that decodes an entry's bytes for ZipReader, whether
// libzip reads them (reader.cc) or a RandomAccessSource does
// (source_archive.cc). It runs the entry's codec, refuses output past the
// entry's size, checks the size and CRC-32 at the end and feeds a sink.
// The bytes are untrusted; memory is bounded by the read buffer and the
// codec's (codec.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/zip/compression.h"
#include "carton/zip/reader.h"
#include "codec.h"

namespace carton::zip_internal {

// Where the bytes DecodeEntry decodes come from, front to back.
class EntryInput {
 public:
  virtual ~EntryInput() = default;
  // Fills the front of `buffer` with the next bytes and returns how many; 0
  // at the end. DecodeEntry names the entry in the errors returned.
  virtual Result<std::size_t> Read(MutableByteView buffer) = 0;
  // Called after the bytes of each Read are decoded and taken by the sink,
  // with the entry's decoded bytes so far.
  virtual void Consumed(std::uint64_t /*decoded*/) {}
};

// How DecodeEntry treats the bytes it reads.
struct DecodeOptions {
  // The codec run here: kStored for bytes that arrive decoded (libzip
  // decodes deflate itself).
  Compression codec = Compression::kStored;
  // False when the layer below checks the CRC-32 itself.
  bool check_crc = true;
  int max_zstd_window_log = kZipMaxZstdWindowLog;
  // Bytes asked of the input at a time.
  std::size_t read_size = 0;
};

// Decodes `entry` from `input` into `sink`. Errors: kCorrupt (bad data,
// more or fewer bytes than entry.size, with check_crc a CRC-32 other than
// entry.crc32), kUnsupported (a zstd window over the limit), kInternal,
// the input's errors; each names the entry (not the archive). Errors from
// the sink come back unchanged.
Status DecodeEntry(const ZipEntry& entry, const DecodeOptions& options, EntryInput& input,
                   const ByteSink& sink);

}  // namespace carton::zip_internal
