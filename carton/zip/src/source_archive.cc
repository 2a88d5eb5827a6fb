#include "source_archive.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "codec.h"
#include "decode.h"
#include "records.h"

namespace carton::zip_internal {
namespace {

constexpr std::size_t kReadChunk = 1 << 20;

std::string EntryContext(std::string_view name) { return "entry " + QuoteName(name); }

Result<std::vector<std::byte>> ReadRange(const RandomAccessSource& source, std::uint64_t offset,
                                         std::uint64_t length) {
  std::vector<std::byte> out(static_cast<std::size_t>(length));
  CARTON_RETURN_IF_ERROR(source.ReadAt(offset, out));
  return out;
}

// The end records, read from the shortest tail that holds them.
Result<CentralDirectoryLocation> Locate(const RandomAccessSource& source,
                                        std::vector<std::byte>* tail, std::uint64_t* base) {
  const std::uint64_t size = source.size();
  const std::uint64_t longest = kMaxCommentSize + kEndSize + kZip64LocatorSize + kZip64EndSize;
  for (std::uint64_t want : {kSourceTailSize, longest}) {
    const std::uint64_t n = std::min(size, want);
    *base = size - n;
    CARTON_ASSIGN_OR_RETURN(*tail, ReadRange(source, *base, n));
    auto cd = LocateCentralDirectory(*tail, *base);
    if (cd.ok() || *base == 0 || n == size || want == longest) return cd;
  }
  return Internal("unreachable");
}

// The central directory's bytes, from the tail when they are in it.
Result<std::vector<std::byte>> ReadCentralDirectory(const RandomAccessSource& source,
                                                    CentralDirectoryLocation* cd) {
  std::vector<std::byte> tail;
  std::uint64_t base = 0;
  CARTON_ASSIGN_OR_RETURN(*cd, Locate(source, &tail, &base));
  if (cd->size > kMaxSourceCentralDirectory) {
    return Unsupported("central directory of " + std::to_string(cd->size) +
                       " bytes is larger than the limit of " +
                       std::to_string(kMaxSourceCentralDirectory) + " for remote reading");
  }
  std::vector<std::byte> dir;
  if (cd->offset >= base) {
    const auto* begin = tail.data() + (cd->offset - base);
    dir.assign(begin, begin + cd->size);
  } else {
    CARTON_ASSIGN_OR_RETURN(dir, ReadRange(source, cd->offset, cd->size));
  }
  return dir;
}

// Reads from `source` the `size` bytes at `offset`, front to back.
class SourceInput final : public EntryInput {
 public:
  SourceInput(const RandomAccessSource& source, std::uint64_t offset, std::uint64_t size)
      : source_(source), offset_(offset), left_(size) {}

  Result<std::size_t> Read(MutableByteView buffer) override {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), left_));
    if (n == 0) return n;
    CARTON_RETURN_IF_ERROR(source_.ReadAt(offset_, buffer.first(n)));
    offset_ += n;
    left_ -= n;
    return n;
  }

 private:
  const RandomAccessSource& source_;
  std::uint64_t offset_;
  std::uint64_t left_;
};

}  // namespace

Result<SourceArchive> SourceArchive::Open(std::unique_ptr<RandomAccessSource> source) {
  SourceArchive a;
  CentralDirectoryLocation cd;
  CARTON_ASSIGN_OR_RETURN(std::vector<std::byte> dir, ReadCentralDirectory(*source, &cd));
  CARTON_RETURN_IF_ERROR(a.AddEntries(dir, cd));
  CARTON_RETURN_IF_ERROR(a.SetLimits());
  a.source_ = std::move(source);
  return a;
}

Status SourceArchive::AddEntries(ByteView dir, const CentralDirectoryLocation& cd) {
  const auto count = static_cast<std::size_t>(cd.entry_count);
  entries_.reserve(count);
  records_.reserve(count);
  std::set<std::string, std::less<>> names;
  std::uint64_t pos = 0;
  for (std::size_t i = 0; i < count; ++i) {
    CARTON_ASSIGN_OR_RETURN(CentralRecord r, ReadCentralRecord(dir, pos, dir.size()));
    pos = r.next;
    const std::string name(r.name);
    const std::string context = EntryContext(name);
    if (auto why = CheckEntryName(name)) return Corrupt(context + ": name " + *why);
    if (!names.insert(name).second) return Corrupt(context + ": duplicate name");
    // The local header (at least its fixed part and the name) and the data
    // must lie before the central directory.
    std::uint64_t end = 0;
    if (!CheckedAdd(r.local_header_offset, kLocalHeaderSize + r.name.size(), &end) ||
        !CheckedAdd(end, r.compressed_size, &end) || end > cd.offset) {
      return Corrupt(context + ": " + std::to_string(r.compressed_size) +
                     " bytes of data at local header offset " +
                     std::to_string(r.local_header_offset) + " run past the central directory at " +
                     std::to_string(cd.offset));
    }
    CARTON_ASSIGN_OR_RETURN(ZipEntry e, EntryFromRecord(r, name, i, context));
    entries_.push_back(std::move(e));
    records_.push_back({r.local_header_offset, cd.offset, r.flags});
  }
  if (pos != dir.size()) {
    return Corrupt("central directory has " + std::to_string(dir.size() - pos) +
                   " bytes after its " + std::to_string(count) + " entries");
  }
  return Status::Ok();
}

Status SourceArchive::SetLimits() {
  // Each entry must end before the next one starts; entries sharing bytes
  // let a small archive expand without bound. The exact end is known once
  // the local header is read (Decode); here each gets the next start as its
  // limit, and the smallest possible extent is checked against it.
  const std::size_t count = entries_.size();
  std::vector<std::size_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return records_[x].local_header_offset < records_[y].local_header_offset;
  });
  for (std::size_t k = 0; k + 1 < count; ++k) {
    Record& r = records_[order[k]];
    const ZipEntry& e = entries_[order[k]];
    r.limit = records_[order[k + 1]].local_header_offset;
    if (r.local_header_offset + kLocalHeaderSize + e.name.size() + e.compressed_size > r.limit) {
      return Corrupt(EntryContext(entries_[order[k + 1]].name) + " overlaps " +
                     EntryContext(e.name));
    }
  }
  return Status::Ok();
}

Result<std::uint64_t> SourceArchive::DataOffset(std::size_t index) const {
  const ZipEntry& e = entries_[index];
  const Record& rec = records_[index];
  // The local header: its fixed part gives the lengths of what follows.
  CARTON_ASSIGN_OR_RETURN(std::vector<std::byte> fixed,
                          ReadRange(*source_, rec.local_header_offset, kLocalHeaderSize));
  const std::uint64_t variable =
      std::uint64_t{LoadLE16(fixed.data() + 26)} + LoadLE16(fixed.data() + 28);
  if (!InBounds(rec.local_header_offset, kLocalHeaderSize + variable, rec.limit)) {
    return Corrupt("local header at offset " + std::to_string(rec.local_header_offset) +
                   " runs into the next entry or the central directory");
  }
  CARTON_ASSIGN_OR_RETURN(
      std::vector<std::byte> header,
      ReadRange(*source_, rec.local_header_offset, kLocalHeaderSize + variable));
  CARTON_ASSIGN_OR_RETURN(ParsedLocalHeader local, ParseLocalHeader(header, 0, header.size()));
  CentralRecord central;
  central.flags = rec.flags;
  central.method = e.method;
  central.crc32 = e.crc32;
  central.compressed_size = e.compressed_size;
  central.size = e.size;
  central.name = e.name;
  CARTON_RETURN_IF_ERROR(CheckLocalMatchesCentral(local, central));
  const std::uint64_t data_offset = rec.local_header_offset + local.data_offset;
  if (!InBounds(data_offset, e.compressed_size, rec.limit)) {
    return Corrupt(std::to_string(e.compressed_size) + " bytes of data at offset " +
                   std::to_string(data_offset) +
                   " run into the next entry or the central directory");
  }
  return data_offset;
}

Status SourceArchive::Decode(std::size_t index, const std::function<Status(ByteView)>& sink) const {
  const ZipEntry& e = entries_[index];
  auto data_offset = DataOffset(index);
  if (!data_offset.ok()) return data_offset.status().WithContext(EntryContext(e.name));
  DecodeOptions decode;
  decode.codec = CompressionFromZipMethod(e.method).value_or(Compression::kStored);
  decode.read_size =
      static_cast<std::size_t>(std::min<std::uint64_t>(e.compressed_size, kReadChunk));
  SourceInput input(*source_, *data_offset, e.compressed_size);
  return DecodeEntry(e, decode, input, sink);
}

}  // namespace carton::zip_internal
