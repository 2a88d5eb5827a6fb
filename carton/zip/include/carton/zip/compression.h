// The compression methods of carton's zip container (stored, deflate,
// zstd), their zip method numbers, and the zip checksum (CRC-32).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton {

enum class Compression : std::uint8_t { kStored, kDeflate, kZstd };

// "stored", "deflate", "zstd".
std::string_view CompressionName(Compression c);
// The inverse of CompressionName, for names from users and documents
// (untrusted). Errors: kInvalidArgument "must be stored, deflate or zstd,
// not "<name>"" (callers add where the name came from).
Result<Compression> ParseCompression(std::string_view name);
// The method number in zip headers: 0, 8, 93.
std::uint16_t ZipMethodNumber(Compression c);
// The Compression of a zip method number; nullopt for any other method.
std::optional<Compression> CompressionFromZipMethod(std::uint16_t method);

// zstd levels above this need more than ~100 MiB of memory to compress.
inline constexpr int kZipMaxZstdLevel = 19;

// Whether zstd is worth it for the file at `path` of `size` bytes (pack's
// automatic choice): compresses up to 256 KiB from its start and middle at
// zstd level 1 and says yes when that shrinks them below 90%. A file that
// cannot be read gives false (the real read reports the error).
bool ZstdPays(const std::string& path, std::uint64_t size);
// The same for bytes in memory (the same sample of them).
bool ZstdPays(ByteView data);

// The CRC-32 zip stores for an entry's data: start with crc = 0 and feed
// the bytes in order, in pieces of any size.
std::uint32_t UpdateCrc32(std::uint32_t crc, ByteView data);

}  // namespace carton
