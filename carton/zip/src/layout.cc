// Layout prediction and trial compression (carton/zip/layout.h): the
// arithmetic ZipWriter places entries with, and its encoders run without
// writing anything.
#include "carton/zip/layout.h"

#include "codec.h"
#include "records.h"

namespace carton {
namespace {

// An alignment field holds at least its 16-bit alignment value.
constexpr std::uint64_t kMinAlignmentField = zip_internal::kExtraHeaderSize + 2;
// A local header's zip64 field with both sizes (APPNOTE 4.5.3).
constexpr std::uint64_t kLocalZip64Field = zip_internal::kExtraHeaderSize + 16;

// Bytes libzip adds to a local header for the zip64 field: with either size
// at or past 0xFFFFFFFF it writes the field, holding both sizes when one of
// them exceeds that value (libzip 1.7, _zip_dirent_write).
std::uint64_t LocalZip64Size(std::uint64_t size, std::uint64_t compressed) {
  if (size < zip_internal::kMax32 && compressed < zip_internal::kMax32) return 0;
  if (size > zip_internal::kMax32 || compressed > zip_internal::kMax32) return kLocalZip64Field;
  return zip_internal::kExtraHeaderSize;
}

// Size of the alignment extra field (0 for none) that makes data following a
// header prefix ending at `end` start at a multiple of `alignment`.
std::uint64_t AlignmentFieldSize(std::uint64_t end, std::uint32_t alignment) {
  if (alignment <= 1) return 0;
  const std::uint64_t misalignment = end % alignment;
  if (misalignment == 0) return 0;
  std::uint64_t field = alignment - misalignment;
  while (field < kMinAlignmentField) field += alignment;
  return field;
}

}  // namespace

std::optional<std::string> ZipEntryNameProblem(std::string_view name) {
  return zip_internal::CheckEntryName(name);
}

std::string QuoteZipEntryName(std::string_view name) { return zip_internal::QuoteName(name); }

Result<int> ResolveZipLevel(Compression method, int level) {
  return zip_internal::ResolveLevel(method, level);
}

ZipEntryPlacement PlaceZipEntry(std::uint64_t header_offset, std::size_t name_size,
                                Compression method, std::uint64_t size,
                                std::uint64_t compressed_size, std::uint32_t alignment) {
  const std::uint64_t prefix_end = header_offset + zip_internal::kLocalHeaderSize + name_size +
                                   LocalZip64Size(size, compressed_size);
  ZipEntryPlacement p;
  if (method == Compression::kStored) p.alignment_field = AlignmentFieldSize(prefix_end, alignment);
  p.data_offset = prefix_end + p.alignment_field;
  p.next_header = p.data_offset + compressed_size;
  return p;
}

std::uint64_t PlaceZipDirectory(std::uint64_t header_offset, std::size_t name_size) {
  return header_offset + zip_internal::kLocalHeaderSize + name_size;
}

Result<bool> ZipEntryCompressesTo(const ZipReader& zip, const ZipEntry& entry, Compression method,
                                  int level, int zstd_workers, bool frames) {
  if (method == Compression::kStored) return false;
  auto resolved = zip_internal::ResolveLevel(method, level);
  if (!resolved.ok()) return false;
  const bool framed = frames && method == Compression::kZstd && entry.size > kZipBatchFileMax;
  auto encoder = zip_internal::MakeEncoder(method, *resolved, entry.size, zstd_workers, framed);
  if (!encoder.ok()) return false;
  std::uint64_t out = 0;
  bool longer = false;
  const zip_internal::ByteSink count = [&](ByteView b) {
    out += b.size();
    if (out > entry.compressed_size) {
      longer = true;
      return Internal("longer");  // stops the encoder; not an error here
    }
    return Status::Ok();
  };
  Status s =
      zip.ReadTo(entry.name, [&](ByteView chunk) { return (*encoder)->Update(chunk, count); });
  if (longer) return false;
  CARTON_RETURN_IF_ERROR(s);
  s = (*encoder)->Finish(count);
  if (longer) return false;
  CARTON_RETURN_IF_ERROR(s);
  return out == entry.compressed_size;
}

}  // namespace carton
