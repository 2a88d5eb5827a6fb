// ZipReader: validates an untrusted archive once, then reads entries from it.

#include <zlib.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "carton/carton/zip.h"
#include "carton/common/mapped_file.h"
#include "zip_codec.h"
#include "zip_format.h"

namespace carton {
namespace {

namespace fmt = zip_format;

constexpr std::size_t kStoredChunk = 4 << 20;

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s);
  }
};

std::string EntryContext(std::string_view name) {
  return "entry " + fmt::QuoteName(name);
}

bool IsUnixSymlink(const fmt::CentralHeader& h) {
  return (h.version_made_by >> 8) == fmt::kHostUnix &&
         ((h.external_attributes >> 16) & fmt::kUnixTypeMask) ==
             fmt::kUnixSymlinkType;
}

// The local header must describe the same entry as the central directory:
// a reader that walks local headers must not see another archive.
Status CheckLocalMatchesCentral(const fmt::ParsedLocalHeader& local,
                                const fmt::CentralHeader& central) {
  if (AsChars(local.name) != central.name) {
    return Corrupt("local header name " + fmt::QuoteName(AsChars(local.name)) +
                   " differs from the central directory");
  }
  if (local.method != central.method) {
    return Corrupt("local header method " + std::to_string(local.method) +
                   " differs from the central directory's " +
                   std::to_string(central.method));
  }
  constexpr std::uint16_t kEncryption =
      fmt::kFlagEncrypted | fmt::kFlagStrongEncryption;
  if ((local.flags & kEncryption) != (central.flags & kEncryption)) {
    return Corrupt("local and central headers disagree about encryption");
  }
  if ((local.flags & fmt::kFlagDataDescriptor) != 0) return Status::Ok();
  std::uint64_t size = local.zip64_size.value_or(local.size32);
  std::uint64_t csize =
      local.zip64_compressed_size.value_or(local.compressed_size32);
  if (local.crc32 != central.crc32 || size != central.size ||
      csize != central.compressed_size) {
    return Corrupt(
        "local header (crc " + fmt::Hex(local.crc32, 8) + ", size " +
        std::to_string(size) + ", compressed " + std::to_string(csize) +
        ") differs from the central directory (crc " +
        fmt::Hex(central.crc32, 8) + ", size " + std::to_string(central.size) +
        ", compressed " + std::to_string(central.compressed_size) + ")");
  }
  return Status::Ok();
}

}  // namespace

struct ZipReader::Impl {
  MappedFile file;  // empty for OpenBuffer
  ByteView data;
  std::string label;  // the path, or empty
  ZipReaderOptions options;
  std::vector<ZipEntry> entries;
  std::vector<std::uint64_t> data_offsets;
  std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>>
      by_name;

  Status Fail(Status s) const {
    return label.empty() ? s : s.WithContext(label);
  }

  Status Load() {
    std::uint64_t cd_limit = 0;
    CARTON_ASSIGN_OR_RETURN(fmt::EndRecord end,
                            fmt::ParseEndRecords(data, &cd_limit));
    CARTON_ASSIGN_OR_RETURN(auto headers,
                            fmt::ParseCentralDirectory(data, end, cd_limit));
    entries.reserve(headers.size());
    data_offsets.reserve(headers.size());
    struct Span {
      std::uint64_t begin, end;
      std::size_t index;
    };
    std::vector<Span> spans;
    spans.reserve(headers.size());
    for (std::size_t i = 0; i < headers.size(); ++i) {
      const fmt::CentralHeader& h = headers[i];
      const std::string context = EntryContext(h.name);
      if (auto why = fmt::CheckEntryName(h.name))
        return Corrupt(context + ": name " + *why);
      if (!by_name.emplace(h.name, i).second)
        return Corrupt(context + ": duplicate name");
      auto local =
          fmt::ParseLocalHeader(data, h.local_header_offset, end.cd_offset);
      if (!local.ok()) return local.status().WithContext(context);
      Status s = CheckLocalMatchesCentral(*local, h);
      if (!s.ok()) return s.WithContext(context);
      if (!InBounds(local->data_offset, h.compressed_size, end.cd_offset)) {
        return Corrupt(context + ": " + std::to_string(h.compressed_size) +
                       " bytes of data at offset " +
                       std::to_string(local->data_offset) +
                       " run past the central directory at " +
                       std::to_string(end.cd_offset));
      }
      ZipEntry e;
      e.name = h.name;
      e.index = i;
      e.method = h.method;
      e.compressed_size = h.compressed_size;
      e.size = h.size;
      e.crc32 = h.crc32;
      e.is_dir = h.name.back() == '/';
      e.is_symlink = IsUnixSymlink(h);
      e.encrypted =
          (h.flags & (fmt::kFlagEncrypted | fmt::kFlagStrongEncryption)) != 0;
      if (e.method == fmt::kMethodStored && !e.encrypted &&
          e.size != e.compressed_size) {
        return Corrupt(context + ": stored, but its size " +
                       std::to_string(e.size) +
                       " differs from its compressed size " +
                       std::to_string(e.compressed_size));
      }
      spans.push_back(
          {h.local_header_offset, local->data_offset + h.compressed_size, i});
      data_offsets.push_back(local->data_offset);
      entries.push_back(std::move(e));
    }
    // Entries that share bytes let a small archive expand without bound.
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t k = 1; k < spans.size(); ++k) {
      if (spans[k].begin < spans[k - 1].end) {
        return Corrupt(EntryContext(entries[spans[k].index].name) +
                       " overlaps " +
                       EntryContext(entries[spans[k - 1].index].name));
      }
    }
    return Status::Ok();
  }

  Result<std::size_t> Lookup(std::string_view name) const {
    auto it = by_name.find(name);
    if (it == by_name.end())
      return Fail(NotFound("no entry " + fmt::QuoteName(name)));
    return it->second;
  }

  // Decodes entry `i` into `sink`, checking size and CRC. Errors from the
  // sink come back unchanged; all others name the entry.
  Status Decode(std::size_t i, const Sink& sink) const {
    const ZipEntry& e = entries[i];
    const std::string context = EntryContext(e.name);
    if (e.encrypted) return Fail(Unsupported(context + ": is encrypted"));
    std::optional<Compression> method = CompressionFromZipMethod(e.method);
    if (!method) {
      return Fail(Unsupported(context + ": compression method " +
                              std::to_string(e.method) + " is not supported"));
    }
    ByteView in = data.subspan(data_offsets[i], e.compressed_size);
    uLong crc = crc32_z(0, nullptr, 0);
    std::uint64_t total = 0;
    Status sink_error;
    auto check = [&](ByteView chunk) -> Status {
      if (chunk.size() > e.size - total) {
        return Corrupt("decodes to more than its size of " +
                       std::to_string(e.size) + " bytes");
      }
      total += chunk.size();
      crc = crc32_z(crc, reinterpret_cast<const Bytef*>(chunk.data()),
                    chunk.size());
      sink_error = sink(chunk);
      return sink_error;
    };
    Status s;
    switch (*method) {
      case Compression::kStored:
        for (std::size_t pos = 0; pos < in.size() && s.ok();
             pos += kStoredChunk) {
          s = check(in.subspan(pos, std::min(kStoredChunk, in.size() - pos)));
        }
        break;
      case Compression::kDeflate:
        s = zip_codec::Inflate(in, e.size, check);
        break;
      case Compression::kZstd:
        s = zip_codec::DecompressZstd(in, e.size, check);
        break;
    }
    if (!sink_error.ok()) return sink_error;
    if (!s.ok()) return Fail(s.WithContext(context));
    if (total != e.size) {
      return Fail(Corrupt(context + ": decodes to " + std::to_string(total) +
                          " bytes, but its size is " + std::to_string(e.size)));
    }
    if (crc != e.crc32) {
      return Fail(Corrupt(context + ": crc-32 mismatch: the directory says " +
                          fmt::Hex(e.crc32, 8) + ", the data gives " +
                          fmt::Hex(crc, 8)));
    }
    return Status::Ok();
  }

  Result<std::size_t> LookupStored(std::string_view name) const {
    CARTON_ASSIGN_OR_RETURN(std::size_t i, Lookup(name));
    const ZipEntry& e = entries[i];
    if (e.encrypted) {
      return Fail(InvalidArgument(EntryContext(name) +
                                  " is encrypted; it cannot be mapped"));
    }
    if (e.method != fmt::kMethodStored) {
      auto m = CompressionFromZipMethod(e.method);
      return Fail(
          InvalidArgument(EntryContext(name) + " is " +
                          (m ? std::string(CompressionName(*m))
                             : "method " + std::to_string(e.method)) +
                          "-compressed; only stored entries can be mapped"));
    }
    return i;
  }
};

Result<ZipReader> ZipReader::Open(const std::string& path,
                                  const ZipReaderOptions& options) {
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  auto impl = std::make_unique<Impl>();
  impl->file = std::move(file);
  impl->data = impl->file.bytes();
  impl->label = path;
  impl->options = options;
  Status s = impl->Load();
  if (!s.ok()) return impl->Fail(s);
  return ZipReader(std::move(impl));
}

Result<ZipReader> ZipReader::OpenBuffer(ByteView archive,
                                        const ZipReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->data = archive;
  impl->options = options;
  CARTON_RETURN_IF_ERROR(impl->Load());
  return ZipReader(std::move(impl));
}

ZipReader::ZipReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZipReader::ZipReader(ZipReader&&) noexcept = default;
ZipReader& ZipReader::operator=(ZipReader&&) noexcept = default;
ZipReader::~ZipReader() = default;

const std::vector<ZipEntry>& ZipReader::entries() const {
  return impl_->entries;
}

const ZipEntry* ZipReader::Find(std::string_view name) const {
  auto it = impl_->by_name.find(name);
  return it == impl_->by_name.end() ? nullptr : &impl_->entries[it->second];
}

Result<std::vector<std::byte>> ZipReader::Read(std::string_view name) const {
  CARTON_ASSIGN_OR_RETURN(std::size_t i, impl_->Lookup(name));
  const ZipEntry& e = impl_->entries[i];
  if (e.size > impl_->options.max_read_size) {
    return impl_->Fail(
        Unsupported(EntryContext(name) + ": size " + std::to_string(e.size) +
                    " exceeds the read limit of " +
                    std::to_string(impl_->options.max_read_size) + " bytes"));
  }
  // The declared size is untrusted: reserve no more than the data could
  // decode to at deflate's best ratio; zstd can exceed that and grows the
  // vector as it goes.
  constexpr std::uint64_t kMaxDeflateRatio = 1032;
  std::uint64_t plausible;
  if (!CheckedMul(e.compressed_size, kMaxDeflateRatio, &plausible))
    plausible = e.size;
  std::vector<std::byte> out;
  out.reserve(static_cast<std::size_t>(std::min(e.size, plausible + 4096)));
  CARTON_RETURN_IF_ERROR(impl_->Decode(i, [&out](ByteView chunk) {
    out.insert(out.end(), chunk.begin(), chunk.end());
    return Status::Ok();
  }));
  return out;
}

Status ZipReader::ReadTo(std::string_view name, const Sink& sink) const {
  CARTON_ASSIGN_OR_RETURN(std::size_t i, impl_->Lookup(name));
  return impl_->Decode(i, sink);
}

Result<std::uint64_t> ZipReader::DataOffset(std::string_view name) const {
  CARTON_ASSIGN_OR_RETURN(std::size_t i, impl_->LookupStored(name));
  return impl_->data_offsets[i];
}

Result<ByteView> ZipReader::MappedData(std::string_view name) const {
  CARTON_ASSIGN_OR_RETURN(std::size_t i, impl_->LookupStored(name));
  return impl_->data.subspan(impl_->data_offsets[i],
                             impl_->entries[i].compressed_size);
}

ByteView ZipReader::archive() const { return impl_->data; }

}  // namespace carton
