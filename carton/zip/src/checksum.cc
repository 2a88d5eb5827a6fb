// The zip checksum (CRC-32, compression.h), computed with ISA-L: on data in
// the cache about 2.5x libdeflate here (41 against 16 GB/s) and 1.2x on data
// streamed from memory (6.4 against 5.1 GB/s), and every byte a carton stores
// is checksummed when it is verified, extracted or materialized.
#include <isa-l/crc.h>

#include "carton/zip/compression.h"

namespace carton {

std::uint32_t UpdateCrc32(std::uint32_t crc, ByteView data) {
  // crc32_gzip_refl is the reflected CRC-32 of zip and gzip, chained like
  // zlib's crc32: the running value goes in and out uninverted.
  if (data.empty()) return crc;
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

}  // namespace carton
