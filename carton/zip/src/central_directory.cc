// The end records (APPNOTE 4.3.14 to 4.3.16) and central directory records
// (4.3.12), decoded only as far as ZipReader needs to find each entry's
// local header and raw name.

#include <algorithm>
#include <string>

#include "records.h"

namespace carton::zip_internal {
namespace {

// The zip64 end record's "size of record" leaves out its first 12 bytes.
constexpr std::uint64_t kZip64EndFixedSize = kZip64EndSize - 12;

std::string Multidisk() { return "multi-disk archives are not supported"; }

// Applies the zip64 extra field of a central record: it holds the values
// whose 32-bit field is saturated, in APPNOTE order (4.5.3).
Status ReadZip64Extra(ByteView extra, std::uint32_t size32, std::uint32_t csize32,
                      std::uint32_t offset32, std::uint16_t disk16, CentralRecord* r,
                      std::uint32_t* disk) {
  const bool need = size32 == kMax32 || csize32 == kMax32 || offset32 == kMax32 || disk16 == kMax16;
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
      ByteView field = extra.subspan(pos, size);
      auto take64 = [&field](std::uint64_t* v) {
        if (field.size() < 8) return false;
        *v = LoadLE64(field.data());
        field = field.subspan(8);
        return true;
      };
      if ((size32 == kMax32 && !take64(&r->size)) ||
          (csize32 == kMax32 && !take64(&r->compressed_size)) ||
          (offset32 == kMax32 && !take64(&r->local_header_offset))) {
        return Corrupt("zip64 extra field too short");
      }
      if (disk16 == kMax16) {
        if (field.size() < 4) return Corrupt("zip64 extra field too short");
        *disk = LoadLE32(field.data());
      }
    }
    pos += size;
  }
  if (need && !found) return Corrupt("zip64 extra field missing");
  return Status::Ok();
}

// The fields of the end record (APPNOTE 4.3.16) that locate the central
// directory.
struct EndRecord {
  std::uint16_t disk, cd_disk, disk_entries, entries;
  std::uint32_t cd_size, cd_offset;
};

EndRecord DecodeEndRecord(const std::byte* p) {
  return {LoadLE16(p + 4),  LoadLE16(p + 6),  LoadLE16(p + 8),
          LoadLE16(p + 10), LoadLE32(p + 12), LoadLE32(p + 16)};
}

// Where the end record starts in `archive`.
Result<std::uint64_t> FindEndRecord(ByteView archive) {
  const std::uint64_t size = archive.size();
  if (size < kEndSize) {
    return Corrupt("too short to be a zip archive (" + std::to_string(size) + " bytes)");
  }
  // The end record is followed only by its comment: search backwards for a
  // signature whose comment length fits exactly, so bytes appended after an
  // archive are rejected.
  const std::uint64_t last = size - kEndSize;
  const std::uint64_t first = last - std::min<std::uint64_t>(last, kMaxCommentSize);
  for (std::uint64_t pos = last + 1; pos-- > first;) {
    const std::byte* p = archive.data() + pos;
    if (LoadLE32(p) == kEndSignature && LoadLE16(p + 20) == last - pos) return pos;
  }
  return Corrupt("no end of central directory record (not a zip archive, or truncated)");
}

// Decodes the zip64 end record that the locator at `locator` points to
// into `cd`, checked against the classic `end` record; returns where the
// zip64 end record starts in `archive` (offsets as in
// LocateCentralDirectory).
Result<std::uint64_t> ReadZip64End(ByteView archive, std::uint64_t base, std::uint64_t locator,
                                   const EndRecord& end, CentralDirectoryLocation* cd) {
  const std::byte* l = archive.data() + locator;
  const std::uint32_t end64_disk = LoadLE32(l + 4);
  const std::uint64_t end64_abs = LoadLE64(l + 8);
  const std::uint32_t disks = LoadLE32(l + 16);
  if (end64_disk != 0 || disks > 1) return Unsupported(Multidisk());
  if (end64_abs < base || !InBounds(end64_abs - base, kZip64EndSize, locator)) {
    return Corrupt("zip64 end record at offset " + std::to_string(end64_abs) +
                   " lies outside the archive" + (base > 0 ? " or before the bytes read" : ""));
  }
  const std::uint64_t end64 = end64_abs - base;
  const std::byte* z = archive.data() + end64;
  if (LoadLE32(z) != kZip64EndSignature) {
    return Corrupt("no zip64 end record signature at offset " + std::to_string(end64_abs));
  }
  const std::uint64_t record_size = LoadLE64(z + 4);
  if (record_size < kZip64EndFixedSize || !InBounds(end64 + 12, record_size, locator)) {
    return Corrupt("zip64 end record at offset " + std::to_string(end64_abs) + " has a bad size (" +
                   std::to_string(record_size) + ")");
  }
  const std::uint32_t disk64 = LoadLE32(z + 16);
  const std::uint32_t cd_disk64 = LoadLE32(z + 20);
  const std::uint64_t disk_entries64 = LoadLE64(z + 24);
  cd->entry_count = LoadLE64(z + 32);
  cd->size = LoadLE64(z + 40);
  cd->offset = LoadLE64(z + 48);
  if (disk64 != 0 || cd_disk64 != 0 || disk_entries64 != cd->entry_count) {
    return Unsupported(Multidisk());
  }
  // Values that fit the classic record must agree with the zip64 ones, so
  // no reader that prefers one record sees another archive.
  if ((end.entries != kMax16 && end.entries != cd->entry_count) ||
      (end.cd_size != kMax32 && end.cd_size != cd->size) ||
      (end.cd_offset != kMax32 && end.cd_offset != cd->offset)) {
    return Corrupt("the end record and the zip64 end record disagree");
  }
  return end64;
}

// The central directory must end at `cd_limit`, where the end records
// start, and have room for its entries.
Status CheckCentralDirectoryExtent(const CentralDirectoryLocation& cd, std::uint64_t cd_limit) {
  if (!InBounds(cd.offset, cd.size, cd_limit) || cd.offset + cd.size != cd_limit) {
    return Corrupt("central directory at offset " + std::to_string(cd.offset) + " of " +
                   std::to_string(cd.size) + " bytes does not end where the end records start (" +
                   std::to_string(cd_limit) + ")");
  }
  if (cd.entry_count > cd.size / kCentralHeaderSize) {
    return Corrupt(std::to_string(cd.entry_count) +
                   " entries cannot fit in a central directory of " + std::to_string(cd.size) +
                   " bytes");
  }
  return Status::Ok();
}

}  // namespace

Result<CentralDirectoryLocation> LocateCentralDirectory(ByteView archive) {
  return LocateCentralDirectory(archive, 0);
}

// Positions below are offsets into `archive` (the tail); offsets read from
// the records are offsets in the whole archive, `base` more.
Result<CentralDirectoryLocation> LocateCentralDirectory(ByteView archive, std::uint64_t base) {
  CARTON_ASSIGN_OR_RETURN(const std::uint64_t eocd, FindEndRecord(archive));
  const EndRecord end = DecodeEndRecord(archive.data() + eocd);
  CentralDirectoryLocation cd;
  std::uint64_t cd_limit = eocd;
  const bool has_locator =
      eocd >= kZip64LocatorSize &&
      LoadLE32(archive.data() + eocd - kZip64LocatorSize) == kZip64LocatorSignature;
  if (!has_locator) {
    if (end.disk != 0 || end.cd_disk != 0 || end.disk_entries != end.entries) {
      return Unsupported(Multidisk());
    }
    cd = {end.entries, end.cd_offset, end.cd_size};
  } else {
    CARTON_ASSIGN_OR_RETURN(cd_limit,
                            ReadZip64End(archive, base, eocd - kZip64LocatorSize, end, &cd));
  }
  cd_limit += base;
  CARTON_RETURN_IF_ERROR(CheckCentralDirectoryExtent(cd, cd_limit));
  return cd;
}

Result<CentralRecord> ReadCentralRecord(ByteView archive, std::uint64_t offset,
                                        std::uint64_t limit) {
  if (limit > archive.size() || !InBounds(offset, kCentralHeaderSize, limit)) {
    return Corrupt("central directory record at offset " + std::to_string(offset) +
                   " runs past the end of the central directory");
  }
  const std::byte* p = archive.data() + offset;
  if (LoadLE32(p) != kCentralHeaderSignature) {
    return Corrupt("no central directory signature at offset " + std::to_string(offset));
  }
  CentralRecord r;
  r.flags = LoadLE16(p + 8);
  r.method = LoadLE16(p + 10);
  r.crc32 = LoadLE32(p + 16);
  const std::uint32_t csize32 = LoadLE32(p + 20);
  const std::uint32_t size32 = LoadLE32(p + 24);
  const std::uint16_t name_size = LoadLE16(p + 28);
  const std::uint16_t extra_size = LoadLE16(p + 30);
  const std::uint16_t comment_size = LoadLE16(p + 32);
  const std::uint16_t disk16 = LoadLE16(p + 34);
  const std::uint32_t offset32 = LoadLE32(p + 42);
  r.compressed_size = csize32;
  r.size = size32;
  r.local_header_offset = offset32;
  r.version_made_by = LoadLE16(p + 4);
  r.external_attributes = LoadLE32(p + 38);
  const std::uint64_t variable = std::uint64_t{name_size} + extra_size + comment_size;
  const std::uint64_t name_offset = offset + kCentralHeaderSize;
  if (!InBounds(name_offset, variable, limit)) {
    return Corrupt("central directory record at offset " + std::to_string(offset) +
                   ": name and extra fields run past the end of the central "
                   "directory");
  }
  r.name = AsChars(archive.subspan(name_offset, name_size));
  std::uint32_t disk = disk16;
  Status s = ReadZip64Extra(archive.subspan(name_offset + name_size, extra_size), size32, csize32,
                            offset32, disk16, &r, &disk);
  if (!s.ok()) return s.WithContext("entry " + QuoteName(r.name));
  if (disk != 0) return Unsupported("entry " + QuoteName(r.name) + ": " + Multidisk());
  r.next = name_offset + variable;
  return r;
}

Result<ZipEntry> EntryFromRecord(const CentralRecord& r, std::string name, std::uint64_t index,
                                 const std::string& context, bool encrypted) {
  // "Version made by" names the host whose attributes the record holds.
  constexpr std::uint8_t kHostUnix = 3;
  ZipEntry e;
  e.index = index;
  e.method = r.method;
  e.compressed_size = r.compressed_size;
  e.size = r.size;
  e.crc32 = r.crc32;
  e.is_dir = !name.empty() && name.back() == '/';
  e.is_symlink = (r.version_made_by >> 8) == kHostUnix &&
                 ((r.external_attributes >> 16) & kUnixTypeMask) == kUnixSymlinkType;
  e.encrypted = encrypted || (r.flags & (kFlagEncrypted | kFlagStrongEncryption)) != 0;
  e.name = std::move(name);
  if (e.method == kMethodStored && !e.encrypted && e.size != e.compressed_size) {
    return Corrupt(context + ": stored, but its size " + std::to_string(e.size) +
                   " differs from its compressed size " + std::to_string(e.compressed_size));
  }
  return e;
}

}  // namespace carton::zip_internal
