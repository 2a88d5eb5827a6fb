// The few on-disk zip structures (APPNOTE 6.3) carton decodes itself, next
// to libzip, which does the real reading and writing.
//
// libzip has no API for where an entry's data starts, and it hides some
// hostile details (it turns NUL bytes in names into spaces, it does not
// look for entries that share bytes). So ZipReader locates the central
// directory, walks its records for each entry's raw name and local header
// offset, and parses the local header that offset points at; it then
// cross-checks all of that against what libzip reports (reader.cc).
// Nothing here encodes zip structures.
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

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/utf8.h"
#include "carton/zip/reader.h"

namespace carton::zip_internal {

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
inline constexpr std::size_t kExtraHeaderSize = 4;

inline constexpr std::uint16_t kZip64ExtraId = 0x0001;
// Padding that aligns an entry's data (the id Android's zipalign uses): a
// 16-bit alignment followed by zero bytes. Local headers only.
inline constexpr std::uint16_t kAlignmentExtraId = 0xD935;

inline constexpr std::uint32_t kMax32 = 0xFFFFFFFF;
inline constexpr std::uint16_t kMax16 = 0xFFFF;

inline constexpr std::uint16_t kFlagEncrypted = 0x0001;
inline constexpr std::uint16_t kFlagDataDescriptor = 0x0008;
inline constexpr std::uint16_t kFlagStrongEncryption = 0x0040;

inline constexpr std::uint16_t kMethodStored = 0;
inline constexpr std::uint16_t kMethodDeflate = 8;
inline constexpr std::uint16_t kMethodZstd = 93;

// "Version needed to extract" for zstd entries (APPNOTE 4.4.3.2).
inline constexpr std::uint16_t kVersionZstd = 63;

// 1980-01-01 00:00:00, the earliest DOS timestamp.
inline constexpr std::uint16_t kDosTime = 0;
inline constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;

inline constexpr std::uint32_t kUnixFileMode = 0100644;
inline constexpr std::uint32_t kUnixDirMode = 040755;
inline constexpr std::uint32_t kUnixTypeMask = 0170000;
inline constexpr std::uint32_t kUnixSymlinkType = 0120000;
inline constexpr std::uint32_t kDosDirAttribute = 0x10;

// A local header read back from an archive (APPNOTE 4.3.7).
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
Result<ParsedLocalHeader> ParseLocalHeader(ByteView archive, std::uint64_t offset,
                                           std::uint64_t limit);

// Where the central directory is, from the end records (APPNOTE 4.3.14 to
// 4.3.16).
struct CentralDirectoryLocation {
  std::uint64_t entry_count = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// Finds and decodes the end records: the end record must be the last thing
// in the archive (followed only by its comment), the central directory must
// end where the end records start, and the entry count must fit in it.
// Untrusted input. Errors: kCorrupt, kUnsupported (multi-disk archives).
Result<CentralDirectoryLocation> LocateCentralDirectory(ByteView archive);
// As above, given only the archive's last bytes: `tail` holds the bytes from
// offset `base` to the end of the archive. kCorrupt when the end records are
// not all inside `tail` (a caller may retry with a longer tail).
Result<CentralDirectoryLocation> LocateCentralDirectory(ByteView tail, std::uint64_t base);

// The fields of one central directory record (APPNOTE 4.3.12) that carton
// cross-checks against libzip, with zip64 values already applied.
struct CentralRecord {
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;
  std::uint64_t local_header_offset = 0;
  std::uint16_t version_made_by = 0;  // the high byte is the host system
  std::uint32_t external_attributes = 0;
  std::string_view name;   // raw bytes, borrowed from the archive
  std::uint64_t next = 0;  // offset of the record after this one
};

// Decodes the record at `offset`, which must end at or before `limit` (the
// end of the central directory). Untrusted input. Errors: kCorrupt,
// kUnsupported (an entry on another disk).
Result<CentralRecord> ReadCentralRecord(ByteView archive, std::uint64_t offset,
                                        std::uint64_t limit);

// The public description of a record (ZipEntry), named `name` (the
// caller decides how raw names are spelled) at central-directory position
// `index`. A stored entry whose two sizes differ is refused (kCorrupt,
// prefixed with `context`); `encrypted` adds what the caller knows
// beyond the record's flags.
Result<ZipEntry> EntryFromRecord(const CentralRecord& r, std::string name, std::uint64_t index,
                                 const std::string& context, bool encrypted = false);

// The local header must describe the same entry as the central directory
// (name, method, encryption, and CRC-32 and sizes unless a data descriptor
// is used): a reader that walks local headers must not see another archive.
// Errors: kCorrupt.
Status CheckLocalMatchesCentral(const ParsedLocalHeader& local, const CentralRecord& central);

// nullopt if `name` is acceptable as an entry name; otherwise why not
// ("is empty", "is absolute", ...). A trailing '/' marks a directory; the
// rest must pass manifest::ValidateEntryPath. Rules in carton/zip/reader.h.
std::optional<std::string> CheckEntryName(std::string_view name);

using carton::IsValidUtf8;  // carton/common/utf8.h

// "0x" and `digits` lowercase hex digits (more if `v` needs them).
std::string Hex(std::uint64_t v, int digits);

// `name` in double quotes for error messages (carton::QuoteForMessage,
// never cut).
std::string QuoteName(std::string_view name);

}  // namespace carton::zip_internal
