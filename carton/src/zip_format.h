// The on-disk structures of a zip archive (APPNOTE 6.3): local headers,
// central directory headers and the end records, each with an encoder (for
// ZipWriter) and a decoder (for ZipReader).
//
// Decoders take the whole archive as a byte view plus offsets, treat it as
// untrusted, check every range without overflow and return kCorrupt or
// kUnsupported. Their messages do not name the archive; callers add that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton::zip_format {

inline constexpr std::uint32_t kLocalHeaderSignature = 0x04034b50;
inline constexpr std::uint32_t kCentralHeaderSignature = 0x02014b50;
inline constexpr std::uint32_t kEndSignature = 0x06054b50;
inline constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
inline constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;

inline constexpr std::size_t kLocalHeaderSize = 30;
inline constexpr std::size_t kCentralHeaderSize = 46;
inline constexpr std::size_t kEndSize = 22;
inline constexpr std::size_t kZip64EndSize = 56;
inline constexpr std::size_t kZip64LocatorSize = 20;
inline constexpr std::size_t kMaxCommentSize = 0xFFFF;

inline constexpr std::uint16_t kZip64ExtraId = 0x0001;
// Padding that aligns an entry's data (the id Android's zipalign uses): a
// 16-bit alignment followed by zero bytes. Local headers only.
inline constexpr std::uint16_t kAlignmentExtraId = 0xD935;

inline constexpr std::uint32_t kMax32 = 0xFFFFFFFF;
inline constexpr std::uint16_t kMax16 = 0xFFFF;

inline constexpr std::uint16_t kFlagEncrypted = 0x0001;
inline constexpr std::uint16_t kFlagDataDescriptor = 0x0008;
inline constexpr std::uint16_t kFlagStrongEncryption = 0x0040;
inline constexpr std::uint16_t kFlagUtf8 = 0x0800;

inline constexpr std::uint16_t kMethodStored = 0;
inline constexpr std::uint16_t kMethodDeflate = 8;
inline constexpr std::uint16_t kMethodZstd = 93;

// "Version needed to extract" values (APPNOTE 4.4.3.2).
inline constexpr std::uint16_t kVersionStored = 10;
inline constexpr std::uint16_t kVersionDeflate = 20;
inline constexpr std::uint16_t kVersionZip64 = 45;
inline constexpr std::uint16_t kVersionZstd = 63;
// "Version made by": Unix (3) in the high byte, APPNOTE 6.3 in the low one.
inline constexpr std::uint16_t kVersionMadeByUnix = (3 << 8) | 63;
inline constexpr std::uint8_t kHostUnix = 3;

// 1980-01-01 00:00:00, the earliest DOS timestamp.
inline constexpr std::uint16_t kDosTime = 0;
inline constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;

inline constexpr std::uint32_t kUnixFileMode = 0100644;
inline constexpr std::uint32_t kUnixDirMode = 040755;
inline constexpr std::uint32_t kUnixTypeMask = 0170000;
inline constexpr std::uint32_t kUnixSymlinkType = 0120000;
inline constexpr std::uint32_t kDosDirAttribute = 0x10;

// A local file header (APPNOTE 4.3.7).
struct LocalHeader {
  std::uint16_t version_needed = kVersionDeflate;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint16_t time = kDosTime;
  std::uint16_t date = kDosDate;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  // Sizes go to a zip64 extra field (both of them, as APPNOTE 4.5.3
  // requires in local headers) and the 32-bit fields hold 0xFFFFFFFF.
  bool zip64 = false;
  std::string_view name;
};

// Encodes `h` for a header that starts at archive offset `offset`. With
// `alignment` > 1 an alignment extra field makes the data that follows the
// header start at a multiple of `alignment`. The length depends only on the
// name, `zip64`, `offset` and `alignment`, so a header encoded again with
// the final CRC and sizes can overwrite the first one.
// REQUIRES: name.size() <= 0xFFFF; alignment a power of two <= 32768.
std::vector<std::byte> EncodeLocalHeader(const LocalHeader& h,
                                         std::uint64_t offset,
                                         std::uint32_t alignment);

// A local header read back from an archive.
struct ParsedLocalHeader {
  std::uint16_t version_needed = 0;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  // Raw 32-bit fields; see zip64_* for values from a zip64 extra field.
  std::uint32_t compressed_size32 = 0;
  std::uint32_t size32 = 0;
  std::optional<std::uint64_t> zip64_size;
  std::optional<std::uint64_t> zip64_compressed_size;
  ByteView name;              // borrows from the archive
  std::uint64_t data_offset;  // first byte after the header
};

// Parses the local header at `offset`; the header must end at or before
// `limit` (the start of the central directory). Untrusted input.
Result<ParsedLocalHeader> ParseLocalHeader(ByteView archive,
                                           std::uint64_t offset,
                                           std::uint64_t limit);

// A central directory header (APPNOTE 4.3.12).
struct CentralHeader {
  std::uint16_t version_made_by = kVersionMadeByUnix;
  std::uint16_t version_needed = kVersionDeflate;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint16_t time = kDosTime;
  std::uint16_t date = kDosDate;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  std::uint64_t local_header_offset = 0;
  std::uint32_t external_attributes = 0;
  std::string name;
};

// Appends `h`, with a zip64 extra field for whichever of its sizes and
// offset do not fit in 32 bits. REQUIRES: name.size() <= 0xFFFF.
void AppendCentralHeader(const CentralHeader& h, std::vector<std::byte>* out);

// Where the central directory is, from the end records.
struct EndRecord {
  std::uint64_t entry_count = 0;
  std::uint64_t cd_offset = 0;
  std::uint64_t cd_size = 0;
};

// Appends the end records for a central directory described by `end`, to be
// written at archive offset `offset`: a zip64 end record and locator when a
// value does not fit the classic record, then the classic record.
void AppendEndRecords(const EndRecord& end, std::uint64_t offset,
                      std::vector<std::byte>* out);

// Finds and decodes the end records. `cd_limit` receives the offset of the
// first end record; the central directory must end there. Untrusted input.
Result<EndRecord> ParseEndRecords(ByteView archive, std::uint64_t* cd_limit);

// Decodes the central directory `end` describes. Names are returned raw;
// callers validate them. Untrusted input.
Result<std::vector<CentralHeader>> ParseCentralDirectory(
    ByteView archive, const EndRecord& end, std::uint64_t cd_limit);

// nullopt if `name` is acceptable as an entry name; otherwise why not
// ("is empty", "is absolute", ...). Rules in zip.h.
std::optional<std::string> CheckEntryName(std::string_view name);

// True if `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// "0x" and `digits` lowercase hex digits (more if `v` needs them).
std::string Hex(std::uint64_t v, int digits);

// `name` in double quotes, with bytes outside printable ASCII as \xNN, for
// error messages.
std::string QuoteName(std::string_view name);

}  // namespace carton::zip_format
