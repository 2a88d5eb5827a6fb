#include "source_archive.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "codec.h"
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

}  // namespace

Result<SourceArchive> SourceArchive::Open(std::unique_ptr<RandomAccessSource> source) {
  SourceArchive a;
  std::vector<std::byte> tail;
  std::uint64_t base = 0;
  CARTON_ASSIGN_OR_RETURN(CentralDirectoryLocation cd, Locate(*source, &tail, &base));
  if (cd.size > kMaxSourceCentralDirectory) {
    return Unsupported("central directory of " + std::to_string(cd.size) +
                       " bytes is larger than the limit of " +
                       std::to_string(kMaxSourceCentralDirectory) + " for remote reading");
  }
  std::vector<std::byte> dir;
  if (cd.offset >= base) {
    const auto* begin = tail.data() + (cd.offset - base);
    dir.assign(begin, begin + cd.size);
  } else {
    CARTON_ASSIGN_OR_RETURN(dir, ReadRange(*source, cd.offset, cd.size));
  }

  const auto count = static_cast<std::size_t>(cd.entry_count);
  a.entries_.reserve(count);
  a.records_.reserve(count);
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
    a.entries_.push_back(std::move(e));
    a.records_.push_back({r.local_header_offset, cd.offset, r.flags});
  }
  if (pos != dir.size()) {
    return Corrupt("central directory has " + std::to_string(dir.size() - pos) +
                   " bytes after its " + std::to_string(count) + " entries");
  }
  // Each entry must end before the next one starts; entries sharing bytes
  // let a small archive expand without bound. The exact end is known once
  // the local header is read (Decode); here each gets the next start as its
  // limit, and the smallest possible extent is checked against it.
  std::vector<std::size_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return a.records_[x].local_header_offset < a.records_[y].local_header_offset;
  });
  for (std::size_t k = 0; k + 1 < count; ++k) {
    Record& r = a.records_[order[k]];
    const ZipEntry& e = a.entries_[order[k]];
    r.limit = a.records_[order[k + 1]].local_header_offset;
    if (r.local_header_offset + kLocalHeaderSize + e.name.size() + e.compressed_size > r.limit) {
      return Corrupt(EntryContext(a.entries_[order[k + 1]].name) + " overlaps " +
                     EntryContext(e.name));
    }
  }
  a.source_ = std::move(source);
  return a;
}

Status SourceArchive::Decode(std::size_t index, const std::function<Status(ByteView)>& sink) const {
  const ZipEntry& e = entries_[index];
  const Record& rec = records_[index];
  const std::string context = EntryContext(e.name);
  auto fail = [&](const Status& s) { return s.WithContext(context); };

  // The local header: its fixed part gives the lengths of what follows.
  auto fixed = ReadRange(*source_, rec.local_header_offset, kLocalHeaderSize);
  if (!fixed.ok()) return fail(fixed.status());
  const std::uint64_t variable =
      std::uint64_t{LoadLE16(fixed->data() + 26)} + LoadLE16(fixed->data() + 28);
  if (!InBounds(rec.local_header_offset, kLocalHeaderSize + variable, rec.limit)) {
    return fail(Corrupt("local header at offset " + std::to_string(rec.local_header_offset) +
                        " runs into the next entry or the central directory"));
  }
  auto header = ReadRange(*source_, rec.local_header_offset, kLocalHeaderSize + variable);
  if (!header.ok()) return fail(header.status());
  auto local = ParseLocalHeader(*header, 0, header->size());
  if (!local.ok()) return fail(local.status());
  CentralRecord central;
  central.flags = rec.flags;
  central.method = e.method;
  central.crc32 = e.crc32;
  central.compressed_size = e.compressed_size;
  central.size = e.size;
  central.name = e.name;
  if (Status s = CheckLocalMatchesCentral(*local, central); !s.ok()) return fail(s);
  const std::uint64_t data_offset = rec.local_header_offset + local->data_offset;
  if (!InBounds(data_offset, e.compressed_size, rec.limit)) {
    return fail(Corrupt(std::to_string(e.compressed_size) + " bytes of data at offset " +
                        std::to_string(data_offset) +
                        " run into the next entry or the central directory"));
  }

  const auto method = CompressionFromZipMethod(e.method);
  std::optional<ZstdDecoder> zstd;
  std::optional<InflateDecoder> inflate;
  if (method == Compression::kZstd) {
    auto d = ZstdDecoder::Make(e.size);
    if (!d.ok()) return fail(d.status());
    zstd.emplace(std::move(d).value());
  } else if (method == Compression::kDeflate) {
    auto d = InflateDecoder::Make(e.size);
    if (!d.ok()) return fail(d.status());
    inflate.emplace(std::move(d).value());
  }
  std::uint32_t crc = 0;
  std::uint64_t total = 0;
  Status sink_error;
  auto check = [&](ByteView chunk) -> Status {
    if (chunk.size() > e.size - total) {
      return Corrupt("decodes to more than its size of " + std::to_string(e.size) + " bytes");
    }
    total += chunk.size();
    crc = UpdateCrc32(crc, chunk);
    sink_error = sink(chunk);
    return sink_error;
  };
  std::vector<std::byte> buffer(
      static_cast<std::size_t>(std::min<std::uint64_t>(e.compressed_size, kReadChunk)));
  Status s;
  for (std::uint64_t done = 0; done < e.compressed_size && s.ok();) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), e.compressed_size - done));
    MutableByteView chunk(buffer.data(), n);
    s = source_->ReadAt(data_offset + done, chunk);
    if (!s.ok()) break;
    done += n;
    s = zstd ? zstd->Update(chunk, check) : inflate ? inflate->Update(chunk, check) : check(chunk);
  }
  if (!sink_error.ok()) return sink_error;
  if (s.ok() && zstd) s = zstd->Finish();
  if (s.ok() && inflate) s = inflate->Finish();
  if (!s.ok()) return fail(s);
  if (total != e.size) {
    return fail(Corrupt("decodes to " + std::to_string(total) + " bytes, but its size is " +
                        std::to_string(e.size)));
  }
  return ZipReader::CheckCrc32(e, crc);
}

}  // namespace carton::zip_internal
