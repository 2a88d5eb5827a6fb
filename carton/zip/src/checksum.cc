// The zip checksum (CRC-32, compression.h), computed with zlib.
#include <zlib.h>

#include "carton/zip/compression.h"

namespace carton {

std::uint32_t UpdateCrc32(std::uint32_t crc, ByteView data) {
  // crc32_z takes a size_t length, so any piece size works.
  return static_cast<std::uint32_t>(
      crc32_z(crc, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

}  // namespace carton
