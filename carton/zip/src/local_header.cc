// Local file headers (APPNOTE 4.3.7) and the extra fields they carry, read
// back to find where an entry's data starts.

#include <string>

#include "records.h"

namespace carton::zip_internal {
namespace {

std::string At(std::uint64_t offset) { return "at offset " + std::to_string(offset); }

}  // namespace

Result<ParsedLocalHeader> ParseLocalHeader(ByteView archive, std::uint64_t offset,
                                           std::uint64_t limit) {
  if (limit > archive.size() || !InBounds(offset, kLocalHeaderSize, limit)) {
    return Corrupt("local header " + At(offset) + " runs past the central directory at " +
                   std::to_string(limit));
  }
  const std::byte* p = archive.data() + offset;
  if (LoadLE32(p) != kLocalHeaderSignature) {
    return Corrupt("no local header signature " + At(offset));
  }
  ParsedLocalHeader h;
  h.version_needed = LoadLE16(p + 4);
  h.flags = LoadLE16(p + 6);
  h.method = LoadLE16(p + 8);
  h.crc32 = LoadLE32(p + 14);
  h.compressed_size32 = LoadLE32(p + 18);
  h.size32 = LoadLE32(p + 22);
  std::uint16_t name_size = LoadLE16(p + 26);
  std::uint16_t extra_size = LoadLE16(p + 28);
  std::uint64_t name_offset = offset + kLocalHeaderSize;
  if (!InBounds(name_offset, std::uint64_t{name_size} + extra_size, limit)) {
    return Corrupt("local header " + At(offset) + " with a " + std::to_string(name_size) +
                   "-byte name and " + std::to_string(extra_size) +
                   " bytes of extra fields runs past the central directory at " +
                   std::to_string(limit));
  }
  h.name = archive.subspan(name_offset, name_size);
  ByteView extra = archive.subspan(name_offset + name_size, extra_size);
  h.data_offset = name_offset + name_size + extra_size;

  // Fewer than four bytes left cannot hold a field; some aligners pad with
  // bare zero bytes, so those are ignored.
  std::size_t pos = 0;
  while (extra.size() - pos >= kExtraHeaderSize) {
    std::uint16_t id = LoadLE16(extra.data() + pos);
    std::uint16_t size = LoadLE16(extra.data() + pos + 2);
    pos += kExtraHeaderSize;
    if (size > extra.size() - pos) {
      return Corrupt("local header " + At(offset) + ": extra field " + Hex(id, 4) +
                     " runs past the extra data");
    }
    if (id == kZip64ExtraId) {
      // APPNOTE 4.5.3: the fields present are those whose 32-bit value is
      // 0xFFFFFFFF, in this order.
      std::size_t field = pos;
      auto take = [&](std::optional<std::uint64_t>* v) -> bool {
        if (field + 8 > pos + size) return false;
        *v = LoadLE64(extra.data() + field);
        field += 8;
        return true;
      };
      if ((h.size32 == kMax32 && !take(&h.zip64_size)) ||
          (h.compressed_size32 == kMax32 && !take(&h.zip64_compressed_size))) {
        return Corrupt("local header " + At(offset) + ": zip64 extra field too short");
      }
    }
    pos += size;
  }
  return h;
}

Status CheckLocalMatchesCentral(const ParsedLocalHeader& local, const CentralRecord& central) {
  if (AsChars(local.name) != central.name) {
    return Corrupt("local header name " + QuoteName(AsChars(local.name)) +
                   " differs from the central directory");
  }
  if (local.method != central.method) {
    return Corrupt("local header method " + std::to_string(local.method) +
                   " differs from the central directory's " + std::to_string(central.method));
  }
  constexpr std::uint16_t kEncryption = kFlagEncrypted | kFlagStrongEncryption;
  if ((local.flags & kEncryption) != (central.flags & kEncryption)) {
    return Corrupt("local and central headers disagree about encryption");
  }
  if ((local.flags & kFlagDataDescriptor) != 0) return Status::Ok();
  std::uint64_t size = local.zip64_size.value_or(local.size32);
  std::uint64_t csize = local.zip64_compressed_size.value_or(local.compressed_size32);
  if (local.crc32 != central.crc32 || size != central.size || csize != central.compressed_size) {
    return Corrupt("local header (crc " + Hex(local.crc32, 8) + ", size " + std::to_string(size) +
                   ", compressed " + std::to_string(csize) +
                   ") differs from the central directory (crc " + Hex(central.crc32, 8) +
                   ", size " + std::to_string(central.size) + ", compressed " +
                   std::to_string(central.compressed_size) + ")");
  }
  return Status::Ok();
}

}  // namespace carton::zip_internal
