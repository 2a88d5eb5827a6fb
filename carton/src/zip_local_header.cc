// Local file headers (APPNOTE 4.3.7) and the extra fields they carry.

#include <cstring>
#include <string>

#include "zip_format.h"

namespace carton::zip_format {
namespace {

constexpr std::size_t kExtraHeaderSize = 4;
constexpr std::size_t kLocalZip64ExtraSize = kExtraHeaderSize + 16;
// The alignment field holds at least its 16-bit alignment value.
constexpr std::size_t kMinAlignmentField = kExtraHeaderSize + 2;

// Size of the alignment extra field (0 for none) that makes data following a
// header prefix ending at `end` start at a multiple of `alignment`.
std::size_t AlignmentFieldSize(std::uint64_t end, std::uint32_t alignment) {
  if (alignment <= 1) return 0;
  std::uint64_t misalignment = end % alignment;
  if (misalignment == 0) return 0;
  std::uint64_t field = alignment - misalignment;
  while (field < kMinAlignmentField) field += alignment;
  return static_cast<std::size_t>(field);
}

std::string At(std::uint64_t offset) {
  return "at offset " + std::to_string(offset);
}

}  // namespace

std::vector<std::byte> EncodeLocalHeader(const LocalHeader& h,
                                         std::uint64_t offset,
                                         std::uint32_t alignment) {
  std::size_t zip64_size = h.zip64 ? kLocalZip64ExtraSize : 0;
  std::size_t prefix = kLocalHeaderSize + h.name.size() + zip64_size;
  std::size_t align_size = AlignmentFieldSize(offset + prefix, alignment);
  std::vector<std::byte> out(prefix + align_size, std::byte{0});
  std::byte* p = out.data();
  StoreLE32(p, kLocalHeaderSignature);
  StoreLE16(p + 4, h.version_needed);
  StoreLE16(p + 6, h.flags);
  StoreLE16(p + 8, h.method);
  StoreLE16(p + 10, h.time);
  StoreLE16(p + 12, h.date);
  StoreLE32(p + 14, h.crc32);
  StoreLE32(p + 18,
            h.zip64 ? kMax32 : static_cast<std::uint32_t>(h.compressed_size));
  StoreLE32(p + 22, h.zip64 ? kMax32 : static_cast<std::uint32_t>(h.size));
  StoreLE16(p + 26, static_cast<std::uint16_t>(h.name.size()));
  StoreLE16(p + 28, static_cast<std::uint16_t>(zip64_size + align_size));
  if (!h.name.empty())
    std::memcpy(p + kLocalHeaderSize, h.name.data(), h.name.size());
  p += kLocalHeaderSize + h.name.size();
  if (h.zip64) {
    StoreLE16(p, kZip64ExtraId);
    StoreLE16(p + 2, 16);
    StoreLE64(p + 4, h.size);
    StoreLE64(p + 12, h.compressed_size);
    p += kLocalZip64ExtraSize;
  }
  if (align_size != 0) {
    StoreLE16(p, kAlignmentExtraId);
    StoreLE16(p + 2, static_cast<std::uint16_t>(align_size - kExtraHeaderSize));
    StoreLE16(p + 4, static_cast<std::uint16_t>(alignment));
  }
  return out;
}

Result<ParsedLocalHeader> ParseLocalHeader(ByteView archive,
                                           std::uint64_t offset,
                                           std::uint64_t limit) {
  if (limit > archive.size() || !InBounds(offset, kLocalHeaderSize, limit)) {
    return Corrupt("local header " + At(offset) +
                   " runs past the central directory at " +
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
    return Corrupt(
        "local header " + At(offset) + " with a " + std::to_string(name_size) +
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
      return Corrupt("local header " + At(offset) + ": extra field " +
                     Hex(id, 4) + " runs past the extra data");
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
        return Corrupt("local header " + At(offset) +
                       ": zip64 extra field too short");
      }
    }
    pos += size;
  }
  return h;
}

}  // namespace carton::zip_format
