// Central directory headers (APPNOTE 4.3.12) and the end records that locate
// them (4.3.14 to 4.3.16).

#include <algorithm>
#include <cstring>
#include <string>

#include "zip_format.h"

namespace carton::zip_format {
namespace {

constexpr std::size_t kExtraHeaderSize = 4;
// The zip64 end record's "size of record" leaves out its first 12 bytes.
constexpr std::uint64_t kZip64EndFixedSize = kZip64EndSize - 12;

void Put16(std::vector<std::byte>* out, std::uint16_t v) {
  std::byte b[2];
  StoreLE16(b, v);
  out->insert(out->end(), b, b + 2);
}
void Put32(std::vector<std::byte>* out, std::uint32_t v) {
  std::byte b[4];
  StoreLE32(b, v);
  out->insert(out->end(), b, b + 4);
}
void Put64(std::vector<std::byte>* out, std::uint64_t v) {
  std::byte b[8];
  StoreLE64(b, v);
  out->insert(out->end(), b, b + 8);
}
std::uint32_t Clamp32(std::uint64_t v) {
  return v >= kMax32 ? kMax32 : static_cast<std::uint32_t>(v);
}
std::uint16_t Clamp16(std::uint64_t v) {
  return v >= kMax16 ? kMax16 : static_cast<std::uint16_t>(v);
}

std::string Multidisk() { return "multi-disk archives are not supported"; }

// Reads the zip64 extra field of a central header: the values whose 32-bit
// field is saturated, in APPNOTE order.
Status ReadZip64Extra(ByteView extra, std::uint32_t size32,
                      std::uint32_t csize32, std::uint32_t offset32,
                      std::uint16_t disk16, CentralHeader* h,
                      std::uint32_t* disk) {
  bool need = size32 == kMax32 || csize32 == kMax32 || offset32 == kMax32 ||
              disk16 == kMax16;
  bool found = false;
  std::size_t pos = 0;
  while (extra.size() - pos >= kExtraHeaderSize) {
    std::uint16_t id = LoadLE16(extra.data() + pos);
    std::uint16_t size = LoadLE16(extra.data() + pos + 2);
    pos += kExtraHeaderSize;
    if (size > extra.size() - pos) {
      return Corrupt("extra field " + Hex(id, 4) + " runs past the extra data");
    }
    if (id == kZip64ExtraId && !found) {
      found = true;
      const std::byte* p = extra.data() + pos;
      std::size_t left = size;
      auto take64 = [&](std::uint64_t* v) {
        if (left < 8) return false;
        *v = LoadLE64(p);
        p += 8;
        left -= 8;
        return true;
      };
      if ((size32 == kMax32 && !take64(&h->size)) ||
          (csize32 == kMax32 && !take64(&h->compressed_size)) ||
          (offset32 == kMax32 && !take64(&h->local_header_offset))) {
        return Corrupt("zip64 extra field too short");
      }
      if (disk16 == kMax16) {
        if (left < 4) return Corrupt("zip64 extra field too short");
        *disk = LoadLE32(p);
      }
    }
    pos += size;
  }
  if (need && !found) return Corrupt("zip64 extra field missing");
  return Status::Ok();
}

}  // namespace

void AppendCentralHeader(const CentralHeader& h, std::vector<std::byte>* out) {
  bool big_size = h.size >= kMax32;
  bool big_csize = h.compressed_size >= kMax32;
  bool big_offset = h.local_header_offset >= kMax32;
  std::uint16_t zip64_data =
      static_cast<std::uint16_t>(8 * (big_size + big_csize + big_offset));
  std::uint16_t extra_size =
      zip64_data == 0 ? 0 : kExtraHeaderSize + zip64_data;
  Put32(out, kCentralHeaderSignature);
  Put16(out, h.version_made_by);
  Put16(out, h.version_needed);
  Put16(out, h.flags);
  Put16(out, h.method);
  Put16(out, h.time);
  Put16(out, h.date);
  Put32(out, h.crc32);
  Put32(out, Clamp32(h.compressed_size));
  Put32(out, Clamp32(h.size));
  Put16(out, static_cast<std::uint16_t>(h.name.size()));
  Put16(out, extra_size);
  Put16(out, 0);  // comment length
  Put16(out, 0);  // disk number start
  Put16(out, 0);  // internal attributes
  Put32(out, h.external_attributes);
  Put32(out, Clamp32(h.local_header_offset));
  auto name = AsBytes(h.name);
  out->insert(out->end(), name.begin(), name.end());
  if (zip64_data != 0) {
    Put16(out, kZip64ExtraId);
    Put16(out, zip64_data);
    if (big_size) Put64(out, h.size);
    if (big_csize) Put64(out, h.compressed_size);
    if (big_offset) Put64(out, h.local_header_offset);
  }
}

void AppendEndRecords(const EndRecord& end, std::uint64_t offset,
                      std::vector<std::byte>* out) {
  bool zip64 = end.entry_count >= kMax16 || end.cd_size >= kMax32 ||
               end.cd_offset >= kMax32;
  if (zip64) {
    Put32(out, kZip64EndSignature);
    Put64(out, kZip64EndFixedSize);
    Put16(out, kVersionMadeByUnix);
    Put16(out, kVersionZip64);
    Put32(out, 0);  // this disk
    Put32(out, 0);  // disk with the central directory
    Put64(out, end.entry_count);
    Put64(out, end.entry_count);
    Put64(out, end.cd_size);
    Put64(out, end.cd_offset);
    Put32(out, kZip64LocatorSignature);
    Put32(out, 0);  // disk with the zip64 end record
    Put64(out, offset);
    Put32(out, 1);  // total disks
  }
  Put32(out, kEndSignature);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, Clamp16(end.entry_count));
  Put16(out, Clamp16(end.entry_count));
  Put32(out, Clamp32(end.cd_size));
  Put32(out, Clamp32(end.cd_offset));
  Put16(out, 0);  // comment length
}

Result<EndRecord> ParseEndRecords(ByteView archive, std::uint64_t* cd_limit) {
  const std::uint64_t size = archive.size();
  if (size < kEndSize) {
    return Corrupt("too short to be a zip archive (" + std::to_string(size) +
                   " bytes)");
  }
  // The end record is the last thing in the file, followed only by its
  // comment: search backwards for a signature whose comment length fits
  // exactly, so trailing bytes after an archive are rejected.
  const std::uint64_t last = size - kEndSize;
  const std::uint64_t first =
      last - std::min<std::uint64_t>(last, kMaxCommentSize);
  std::optional<std::uint64_t> found;
  for (std::uint64_t pos = last + 1; pos-- > first;) {
    const std::byte* p = archive.data() + pos;
    if (LoadLE32(p) == kEndSignature && LoadLE16(p + 20) == last - pos) {
      found = pos;
      break;
    }
  }
  if (!found)
    return Corrupt(
        "no end of central directory record (not a zip archive, or truncated)");
  const std::uint64_t eocd = *found;
  const std::byte* p = archive.data() + eocd;
  std::uint16_t disk = LoadLE16(p + 4);
  std::uint16_t cd_disk = LoadLE16(p + 6);
  std::uint16_t disk_entries = LoadLE16(p + 8);
  std::uint16_t entries = LoadLE16(p + 10);
  std::uint32_t cd_size = LoadLE32(p + 12);
  std::uint32_t cd_offset = LoadLE32(p + 16);

  EndRecord end;
  *cd_limit = eocd;
  bool has_locator = eocd >= kZip64LocatorSize &&
                     LoadLE32(archive.data() + eocd - kZip64LocatorSize) ==
                         kZip64LocatorSignature;
  if (!has_locator) {
    if (disk != 0 || cd_disk != 0 || disk_entries != entries)
      return Unsupported(Multidisk());
    end = {entries, cd_offset, cd_size};
  } else {
    const std::uint64_t locator = eocd - kZip64LocatorSize;
    const std::byte* l = archive.data() + locator;
    std::uint32_t end64_disk = LoadLE32(l + 4);
    std::uint64_t end64 = LoadLE64(l + 8);
    std::uint32_t disks = LoadLE32(l + 16);
    if (end64_disk != 0 || disks > 1) return Unsupported(Multidisk());
    if (!InBounds(end64, kZip64EndSize, locator)) {
      return Corrupt("zip64 end record at offset " + std::to_string(end64) +
                     " lies outside the archive");
    }
    const std::byte* z = archive.data() + end64;
    if (LoadLE32(z) != kZip64EndSignature) {
      return Corrupt("no zip64 end record signature at offset " +
                     std::to_string(end64));
    }
    std::uint64_t record_size = LoadLE64(z + 4);
    if (record_size < kZip64EndFixedSize ||
        !InBounds(end64 + 12, record_size, locator)) {
      return Corrupt("zip64 end record at offset " + std::to_string(end64) +
                     " has a bad size (" + std::to_string(record_size) + ")");
    }
    std::uint32_t disk64 = LoadLE32(z + 16);
    std::uint32_t cd_disk64 = LoadLE32(z + 20);
    std::uint64_t disk_entries64 = LoadLE64(z + 24);
    end.entry_count = LoadLE64(z + 32);
    end.cd_size = LoadLE64(z + 40);
    end.cd_offset = LoadLE64(z + 48);
    if (disk64 != 0 || cd_disk64 != 0 || disk_entries64 != end.entry_count) {
      return Unsupported(Multidisk());
    }
    // Values that fit the classic record must agree with the zip64 ones, so
    // no reader that prefers one record sees another archive.
    if ((entries != kMax16 && entries != end.entry_count) ||
        (cd_size != kMax32 && cd_size != end.cd_size) ||
        (cd_offset != kMax32 && cd_offset != end.cd_offset)) {
      return Corrupt("the end record and the zip64 end record disagree");
    }
    *cd_limit = end64;
  }
  if (!InBounds(end.cd_offset, end.cd_size, *cd_limit) ||
      end.cd_offset + end.cd_size != *cd_limit) {
    return Corrupt("central directory at offset " +
                   std::to_string(end.cd_offset) + " of " +
                   std::to_string(end.cd_size) +
                   " bytes does not end where the end records start (" +
                   std::to_string(*cd_limit) + ")");
  }
  if (end.entry_count > end.cd_size / kCentralHeaderSize) {
    return Corrupt(std::to_string(end.entry_count) +
                   " entries cannot fit in a central directory of " +
                   std::to_string(end.cd_size) + " bytes");
  }
  return end;
}

Result<std::vector<CentralHeader>> ParseCentralDirectory(
    ByteView archive, const EndRecord& end, std::uint64_t cd_limit) {
  std::vector<CentralHeader> headers;
  // entry_count is bounded by cd_size / 46, so this is at most one header
  // per 46 bytes of input.
  headers.reserve(static_cast<std::size_t>(end.entry_count));
  std::uint64_t pos = end.cd_offset;
  for (std::uint64_t i = 0; i < end.entry_count; ++i) {
    std::string where = "central directory entry " + std::to_string(i);
    if (!InBounds(pos, kCentralHeaderSize, cd_limit)) {
      return Corrupt(where + " runs past the end of the central directory");
    }
    const std::byte* p = archive.data() + pos;
    if (LoadLE32(p) != kCentralHeaderSignature) {
      return Corrupt(where + ": no signature at offset " + std::to_string(pos));
    }
    CentralHeader h;
    h.version_made_by = LoadLE16(p + 4);
    h.version_needed = LoadLE16(p + 6);
    h.flags = LoadLE16(p + 8);
    h.method = LoadLE16(p + 10);
    h.time = LoadLE16(p + 12);
    h.date = LoadLE16(p + 14);
    h.crc32 = LoadLE32(p + 16);
    std::uint32_t csize32 = LoadLE32(p + 20);
    std::uint32_t size32 = LoadLE32(p + 24);
    std::uint16_t name_size = LoadLE16(p + 28);
    std::uint16_t extra_size = LoadLE16(p + 30);
    std::uint16_t comment_size = LoadLE16(p + 32);
    std::uint16_t disk16 = LoadLE16(p + 34);
    h.external_attributes = LoadLE32(p + 38);
    std::uint32_t offset32 = LoadLE32(p + 42);
    h.compressed_size = csize32;
    h.size = size32;
    h.local_header_offset = offset32;
    std::uint64_t variable =
        std::uint64_t{name_size} + extra_size + comment_size;
    if (!InBounds(pos + kCentralHeaderSize, variable, cd_limit)) {
      return Corrupt(
          where +
          ": name and extra fields run past the end of the central directory");
    }
    h.name = std::string(
        AsChars(archive.subspan(pos + kCentralHeaderSize, name_size)));
    ByteView extra =
        archive.subspan(pos + kCentralHeaderSize + name_size, extra_size);
    std::uint32_t disk = disk16;
    Status s =
        ReadZip64Extra(extra, size32, csize32, offset32, disk16, &h, &disk);
    if (!s.ok()) return s.WithContext("entry " + QuoteName(h.name));
    if (disk != 0)
      return Unsupported("entry " + QuoteName(h.name) + ": " + Multidisk());
    headers.push_back(std::move(h));
    pos += kCentralHeaderSize + variable;
  }
  if (pos != cd_limit) {
    return Corrupt("central directory has " + std::to_string(cd_limit - pos) +
                   " bytes after its " + std::to_string(end.entry_count) +
                   " entries");
  }
  return headers;
}

}  // namespace carton::zip_format
