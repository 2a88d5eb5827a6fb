// ZipReader: opens an untrusted archive with libzip, cross-checks it once,
// then reads entries through libzip.
//
// libzip (ZIP_CHECKCONS) validates the end records, the central directory
// and every local header against it. On top of that, Open() walks the
// central directory itself (records.h) for what libzip does not give:
// raw names (libzip turns NUL bytes into spaces), where each entry's data
// starts (for MappedData) and whether entries share bytes. Each record must
// agree with libzip's view of the same entry, so both parsers see one
// archive. When libzip rejects the archive without saying which entry is
// at fault, the same checks run on a lenient open to name it.

#include "carton/zip/reader.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "carton/common/mapped_file.h"
#include "codec.h"
#include "decode.h"
#include "libzip.h"
#include "records.h"
#include "source_archive.h"

namespace carton {
namespace {

using zip_internal::ArchivePtr;

constexpr std::size_t kMinReadChunk = 4096;
constexpr std::size_t kMaxReadChunk = 1 << 20;

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string EntryContext(std::string_view name) { return "entry " + zip_internal::QuoteName(name); }

// The central record and libzip must describe the same entry.
Status CheckRecordMatchesLibzip(const zip_internal::CentralRecord& r, const zip_stat_t& st) {
  constexpr zip_uint64_t kNeeded =
      ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC | ZIP_STAT_COMP_METHOD;
  if ((st.valid & kNeeded) != kNeeded) {
    return Corrupt("libzip cannot describe the entry");
  }
  // Encrypted entries may name their real method elsewhere (WinZip AES),
  // which libzip reports instead of the record's.
  const bool method_ok =
      st.encryption_method != ZIP_EM_NONE || st.comp_method == static_cast<zip_int32_t>(r.method);
  if (std::string_view(st.name) != r.name || st.size != r.size ||
      st.comp_size != r.compressed_size || st.crc != r.crc32 || !method_ok) {
    return Corrupt("libzip reads the central directory differently (name " +
                   zip_internal::QuoteName(st.name) + ", size " + std::to_string(st.size) +
                   ", compressed " + std::to_string(st.comp_size) + ", crc " +
                   zip_internal::Hex(st.crc, 8) + ")");
  }
  return Status::Ok();
}

// An entry's bytes as libzip hands them over: decoded, or compressed when
// `raw` (zstd, which libzip 1.7 cannot decode).
class LibzipInput final : public zip_internal::EntryInput {
 public:
  // `mapped`: the archive from the entry's data on, when it is our own
  // mapping, whose pages are dropped behind the read.
  LibzipInput(zip_t* za, const ZipEntry& e, bool raw, std::optional<ByteView> mapped)
      : za_(za), e_(e), raw_(raw), mapped_(mapped) {}

  Result<std::size_t> Read(MutableByteView buffer) override {
    // Opened at the first read: after DecodeEntry has made its decoder.
    if (!file_) {
      file_.reset(zip_fopen_index(za_, e_.index, raw_ ? ZIP_FL_COMPRESSED : 0));
      if (!file_) return zip_internal::ReadError(zip_get_error(za_), "");
    }
    zip_int64_t n = zip_fread(file_.get(), buffer.data(), buffer.size());
    if (n < 0) {
      zip_error_t* error = zip_file_get_error(file_.get());
      if (zip_error_code_zip(error) == ZIP_ER_CRC) {
        return Corrupt("crc-32 mismatch: the directory says " + zip_internal::Hex(e_.crc32, 8) +
                       ", the data differs");
      }
      return zip_internal::ReadError(error, "");
    }
    raw_read_ += static_cast<std::uint64_t>(n);
    return static_cast<std::size_t>(n);
  }

  // Streaming a large entry from our own mapping would leave every page
  // of it resident; drop the pages already read (the data stays in the
  // page cache).
  void Consumed(std::uint64_t decoded) override {
    constexpr std::uint64_t kLag = 4 << 20;  // libzip may read a little behind
    std::uint64_t done =
        raw_ ? raw_read_
             : (e_.size == 0
                    ? 0
                    : static_cast<std::uint64_t>(static_cast<long double>(e_.compressed_size) *
                                                 decoded / e_.size));
    if (!mapped_ || done <= released_ + kLag) return;
    ReleaseMappedPages(mapped_->subspan(released_, done - kLag - released_));
    released_ = done - kLag;
  }

 private:
  zip_t* za_;
  const ZipEntry& e_;
  bool raw_;
  std::optional<ByteView> mapped_;
  zip_internal::FilePtr file_;
  std::uint64_t raw_read_ = 0, released_ = 0;
};

}  // namespace

struct ZipReader::Impl {
  std::shared_ptr<const MappedFile> file;  // null for OpenBuffer and OpenSource
  ByteView data;
  std::string label;  // the path, or empty
  ZipReaderOptions options;
  std::vector<ZipEntry> entries;
  std::vector<std::uint64_t> data_offsets;
  std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> by_name;
  // A libzip archive is used by one thread at a time: each read takes an
  // idle one, opening another when there is none.
  mutable std::mutex pool_mutex;
  mutable std::vector<ArchivePtr> idle;
  // Set by OpenSource: entries are read through it, not libzip.
  std::optional<zip_internal::SourceArchive> remote;

  Status Fail(Status s) const { return label.empty() ? s : s.WithContext(label); }

  Result<ArchivePtr> OpenArchive(bool check) const {
    zip_internal::LibzipError error;
    zip_source_t* src = zip_source_buffer_create(data.data(), data.size(), 0, error.get());
    if (src == nullptr) return zip_internal::ReadError(error.get(), "");
    zip_t* z = zip_open_from_source(src, ZIP_RDONLY | (check ? ZIP_CHECKCONS : 0), error.get());
    if (z == nullptr) {
      zip_source_free(src);
      return zip_internal::ReadError(error.get(), "");
    }
    return ArchivePtr(z);
  }

  Status Load() {
    CARTON_ASSIGN_OR_RETURN(zip_internal::CentralDirectoryLocation cd,
                            zip_internal::LocateCentralDirectory(data));
    auto strict = OpenArchive(/*check=*/true);
    if (!strict.ok()) {
      auto lax = OpenArchive(/*check=*/false);
      if (lax.ok()) CARTON_RETURN_IF_ERROR(Index(lax->get(), cd));
      return strict.status();
    }
    CARTON_RETURN_IF_ERROR(Index(strict->get(), cd));
    idle.push_back(std::move(strict).value());
    return Status::Ok();
  }

  // The bytes an entry spans, from its local header to its data's end.
  struct Span {
    std::uint64_t begin, end;
    std::size_t index;
  };

  // Lists the entries of `za`, checking each against its central record
  // and local header.
  Status Index(zip_t* za, const zip_internal::CentralDirectoryLocation& cd) {
    CARTON_RETURN_IF_ERROR(CheckEntryCount(za, cd));
    const auto count = static_cast<std::size_t>(cd.entry_count);
    entries.reserve(count);
    data_offsets.reserve(count);
    std::vector<Span> spans;
    spans.reserve(count);
    const std::uint64_t cd_end = cd.offset + cd.size;
    std::uint64_t pos = cd.offset;
    for (std::size_t i = 0; i < count; ++i) {
      CARTON_ASSIGN_OR_RETURN(zip_internal::CentralRecord r,
                              zip_internal::ReadCentralRecord(data, pos, cd_end));
      pos = r.next;
      CARTON_ASSIGN_OR_RETURN(Span span, IndexEntry(za, r, i, cd));
      spans.push_back(span);
    }
    if (pos != cd_end) {
      return Corrupt("central directory has " + std::to_string(cd_end - pos) + " bytes after its " +
                     std::to_string(count) + " entries");
    }
    CARTON_RETURN_IF_ERROR(CheckLimits());
    return CheckNoOverlaps(std::move(spans));
  }

  // libzip and the end record must count the same entries, within the limit.
  Status CheckEntryCount(zip_t* za, const zip_internal::CentralDirectoryLocation& cd) const {
    const zip_int64_t n = zip_get_num_entries(za, 0);
    if (n < 0 || static_cast<std::uint64_t>(n) != cd.entry_count) {
      return Corrupt("libzip finds " + std::to_string(n) + " entries where the end record lists " +
                     std::to_string(cd.entry_count));
    }
    if (cd.entry_count > options.max_entries) {
      return Corrupt("the archive lists " + std::to_string(cd.entry_count) +
                     " entries, more than the limit of " + std::to_string(options.max_entries));
    }
    return Status::Ok();
  }

  // Adds entry `i` from its central record `r`, checked against libzip's
  // view, its name rules and its local header; returns the bytes it spans.
  Result<Span> IndexEntry(zip_t* za, const zip_internal::CentralRecord& r, std::size_t i,
                          const zip_internal::CentralDirectoryLocation& cd) {
    const std::string name(r.name);
    const std::string context = EntryContext(name);
    if (auto why = zip_internal::CheckEntryName(name)) return Corrupt(context + ": name " + *why);
    if (!by_name.emplace(name, i).second) return Corrupt(context + ": duplicate name");
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, i, ZIP_FL_ENC_RAW, &st) != 0)
      return zip_internal::ReadError(zip_get_error(za), context);
    Status s = CheckRecordMatchesLibzip(r, st);
    if (!s.ok()) return s.WithContext(context);
    auto local = zip_internal::ParseLocalHeader(data, r.local_header_offset, cd.offset);
    if (!local.ok()) return local.status().WithContext(context);
    s = zip_internal::CheckLocalMatchesCentral(*local, r);
    if (!s.ok()) return s.WithContext(context);
    if (!InBounds(local->data_offset, r.compressed_size, cd.offset)) {
      return Corrupt(context + ": " + std::to_string(r.compressed_size) +
                     " bytes of data at offset " + std::to_string(local->data_offset) +
                     " run past the central directory at " + std::to_string(cd.offset));
    }
    auto entry =
        zip_internal::EntryFromRecord(r, name, i, context, st.encryption_method != ZIP_EM_NONE);
    if (!entry.ok()) return entry.status();
    data_offsets.push_back(local->data_offset);
    entries.push_back(std::move(entry).value());
    return Span{r.local_header_offset, local->data_offset + r.compressed_size, i};
  }

  // Entries that share bytes let a small archive expand without bound.
  Status CheckNoOverlaps(std::vector<Span> spans) const {
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t k = 1; k < spans.size(); ++k) {
      if (spans[k].begin < spans[k - 1].end) {
        return Corrupt(EntryContext(entries[spans[k].index].name) + " overlaps " +
                       EntryContext(entries[spans[k - 1].index].name));
      }
    }
    return Status::Ok();
  }

  // The limits of ZipReaderOptions and the name collisions, on the listed
  // entries.
  Status CheckLimits() const {
    if (entries.size() > options.max_entries) {
      return Corrupt("the archive lists " + std::to_string(entries.size()) +
                     " entries, more than the limit of " + std::to_string(options.max_entries));
    }
    std::uint64_t total_size = 0;
    // The decodable entries: what they declare, and the most their data
    // could decode to at their methods' ratio limits.
    std::uint64_t declared = 0, stored = 0, most = 0;
    for (const ZipEntry& e : entries) {
      const std::string context = EntryContext(e.name);
      if (auto ratio = MaxRatio(e)) {
        std::uint64_t entry_most;
        if (!CheckedMul(e.compressed_size, *ratio, &entry_most)) entry_most = kNoLimit;
        if (e.size > options.ratio_min_size && e.size > entry_most) {
          return Corrupt(context + ": declares " + std::to_string(e.size) + " bytes from " +
                         std::to_string(e.compressed_size) + ", more than the " +
                         std::string(CompressionName(*CompressionFromZipMethod(e.method))) +
                         " ratio limit of " + std::to_string(*ratio) + " to 1");
        }
        declared = SaturatingAdd(declared, e.size);
        stored = SaturatingAdd(stored, e.compressed_size);
        most = SaturatingAdd(most, entry_most);
      }
      if (!CheckedAdd(total_size, e.size, &total_size) || total_size > options.max_total_size) {
        return Corrupt(context + ": the entries declare more than the limit of " +
                       std::to_string(options.max_total_size) + " bytes in all");
      }
    }
    // Many entries, each too small for its own check, that lie together.
    if (declared > options.ratio_min_size && declared > most) {
      return Corrupt("the archive: its entries declare " + std::to_string(declared) +
                     " bytes from " + std::to_string(stored) +
                     ", more than their methods' ratio limits allow (deflate " +
                     std::to_string(options.max_deflate_ratio) + ", zstd " +
                     std::to_string(options.max_zstd_ratio) + " to 1)");
    }
    return CheckNameCollisions();
  }

  static constexpr std::uint64_t kNoLimit = ~std::uint64_t{0};

  static std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
    std::uint64_t sum;
    return CheckedAdd(a, b, &sum) ? sum : kNoLimit;
  }

  // The most bytes entry `e` can decode to per compressed byte; nullopt for
  // entries that are never decoded (encrypted, other methods).
  std::optional<std::uint64_t> MaxRatio(const ZipEntry& e) const {
    if (e.encrypted) return std::nullopt;
    switch (e.method) {
      case zip_internal::kMethodStored:
        return 1;
      case zip_internal::kMethodDeflate:
        return options.max_deflate_ratio;
      case zip_internal::kMethodZstd:
        return options.max_zstd_ratio;
      default:
        return std::nullopt;
    }
  }

  // Names that would be one file on a case-insensitive file system
  // ("model/A.bin", "model/a.bin"), or a file whose name another entry uses
  // as a directory ("model/a", "model/A/b"), cannot all be extracted: which
  // one wins would depend on the platform. Letter case is folded for ASCII
  // only (FORMAT.md).
  Status CheckNameCollisions() const {
    auto fold = [](std::string_view name) {
      std::string f(name);
      if (!f.empty() && f.back() == '/') f.pop_back();
      for (char& c : f) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
      return f;
    };
    std::unordered_map<std::string, std::size_t> folded;
    folded.reserve(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      auto [it, fresh] = folded.emplace(fold(entries[i].name), i);
      if (!fresh) {
        const ZipEntry& other = entries[it->second];
        if (other.is_dir != entries[i].is_dir) {
          return Corrupt(EntryContext(entries[i].name) + " and " + EntryContext(other.name) +
                         " name both a file and a directory");
        }
        return Corrupt(EntryContext(entries[i].name) + ": name differs only in letter case from " +
                       EntryContext(entries[it->second].name) +
                       " (one file on a case-insensitive file system)");
      }
    }
    for (const ZipEntry& e : entries) {
      const std::string f = fold(e.name);
      for (std::size_t slash = f.find('/'); slash != std::string::npos;
           slash = f.find('/', slash + 1)) {
        auto it = folded.find(f.substr(0, slash));
        if (it != folded.end() && !entries[it->second].is_dir) {
          return Corrupt(EntryContext(e.name) + ": uses the file " +
                         EntryContext(entries[it->second].name) + " as a directory");
        }
      }
    }
    return Status::Ok();
  }

  Result<std::size_t> Lookup(std::string_view name) const {
    auto it = by_name.find(name);
    if (it == by_name.end()) return Fail(NotFound("no entry " + zip_internal::QuoteName(name)));
    return it->second;
  }

  Result<ArchivePtr> Acquire() const {
    {
      std::lock_guard<std::mutex> lock(pool_mutex);
      if (!idle.empty()) {
        ArchivePtr a = std::move(idle.back());
        idle.pop_back();
        return a;
      }
    }
    // Open() validated these bytes already.
    return OpenArchive(/*check=*/false);
  }

  void Release(ArchivePtr a) const {
    std::lock_guard<std::mutex> lock(pool_mutex);
    idle.push_back(std::move(a));
  }

  // Decodes entry `i` into `sink`, checking size and CRC. Errors from the
  // sink come back unchanged; all others name the entry.
  Status Decode(std::size_t i, const Sink& sink) const {
    const ZipEntry& e = entries[i];
    const std::string context = EntryContext(e.name);
    if (e.encrypted) return Fail(Unsupported(context + ": is encrypted"));
    std::optional<Compression> method = CompressionFromZipMethod(e.method);
    if (!method) {
      return Fail(Unsupported(context + ": compression method " + std::to_string(e.method) +
                              " is not supported"));
    }
    if (remote) {
      Status s = remote->Decode(i, sink);
      return s.ok() ? s : Fail(s);
    }
    auto archive = Acquire();
    if (!archive.ok()) return Fail(archive.status().WithContext(context));
    Status s = DecodeWith(archive->get(), i, *method, sink);
    Release(std::move(archive).value());
    return s;
  }

  // Decodes entry `i` through libzip's `za`; errors name the archive.
  Status DecodeWith(zip_t* za, std::size_t i, Compression method, const Sink& sink) const {
    const ZipEntry& e = entries[i];
    // libzip 1.7 has no zstd: it hands over the compressed bytes, and the
    // size and CRC-32 are checked here. It checks them itself for the rest.
    const bool zstd = method == Compression::kZstd;
    zip_internal::DecodeOptions decode;
    decode.codec = zstd ? Compression::kZstd : Compression::kStored;
    decode.check_crc = zstd;
    decode.max_zstd_window_log = options.max_zstd_window_log;
    decode.read_size = static_cast<std::size_t>(
        std::clamp<std::uint64_t>(zstd ? e.compressed_size : e.size, kMinReadChunk, kMaxReadChunk));
    // Pages of our own mapping are dropped as they are read (LibzipInput);
    // never those of a caller's buffer (OpenBuffer), where it would discard
    // memory.
    std::optional<ByteView> mapped;
    if (file != nullptr && file->size() > 0) mapped = data.subspan(data_offsets[i]);
    LibzipInput input(za, e, zstd, mapped);
    Status sink_error;
    Status s = zip_internal::DecodeEntry(e, decode, input, [&](ByteView chunk) {
      sink_error = sink(chunk);
      return sink_error;
    });
    // Errors from the sink come back unchanged.
    return sink_error.ok() ? Fail(s) : s;
  }

  Result<std::size_t> LookupStored(std::string_view name) const {
    CARTON_ASSIGN_OR_RETURN(std::size_t i, Lookup(name));
    const ZipEntry& e = entries[i];
    if (remote) {
      return Fail(
          InvalidArgument(EntryContext(name) + " is read through a source; it cannot be mapped"));
    }
    if (e.encrypted) {
      return Fail(InvalidArgument(EntryContext(name) + " is encrypted; it cannot be mapped"));
    }
    if (e.method != zip_internal::kMethodStored) {
      auto m = CompressionFromZipMethod(e.method);
      return Fail(InvalidArgument(
          EntryContext(name) + " is " +
          (m ? std::string(CompressionName(*m)) : "method " + std::to_string(e.method)) +
          "-compressed; only stored entries can be mapped"));
    }
    return i;
  }
};

Result<ZipReader> ZipReader::Open(const std::string& path, const ZipReaderOptions& options) {
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return OpenFile(std::make_shared<const MappedFile>(std::move(file)), options);
}

Result<ZipReader> ZipReader::OpenFile(std::shared_ptr<const MappedFile> file,
                                      const ZipReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->data = file->bytes();
  impl->label = file->path();
  impl->file = std::move(file);
  impl->options = options;
  Status s = impl->Load();
  if (!s.ok()) return impl->Fail(s);
  return ZipReader(std::move(impl));
}

Result<ZipReader> ZipReader::OpenBuffer(ByteView archive, const ZipReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->data = archive;
  impl->options = options;
  CARTON_RETURN_IF_ERROR(impl->Load());
  return ZipReader(std::move(impl));
}

Result<ZipReader> ZipReader::OpenSource(std::unique_ptr<RandomAccessSource> source,
                                        const ZipReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->label = source->name();
  impl->options = options;
  auto archive = zip_internal::SourceArchive::Open(std::move(source));
  if (!archive.ok()) return impl->Fail(archive.status());
  impl->remote.emplace(std::move(archive).value());
  impl->entries = impl->remote->entries();
  for (std::size_t i = 0; i < impl->entries.size(); ++i) {
    impl->by_name.emplace(impl->entries[i].name, i);
  }
  Status limits = impl->CheckLimits();
  if (!limits.ok()) return impl->Fail(limits);
  return ZipReader(std::move(impl));
}

ZipReader::ZipReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZipReader::ZipReader(ZipReader&&) noexcept = default;
ZipReader& ZipReader::operator=(ZipReader&&) noexcept = default;
ZipReader::~ZipReader() = default;

const std::vector<ZipEntry>& ZipReader::entries() const { return impl_->entries; }

const ZipEntry* ZipReader::Find(std::string_view name) const {
  auto it = impl_->by_name.find(name);
  return it == impl_->by_name.end() ? nullptr : &impl_->entries[it->second];
}

Result<std::vector<std::byte>> ZipReader::Read(std::string_view name) const {
  CARTON_ASSIGN_OR_RETURN(std::size_t i, impl_->Lookup(name));
  const ZipEntry& e = impl_->entries[i];
  if (e.size > impl_->options.max_read_size) {
    return impl_->Fail(Unsupported(EntryContext(name) + ": size " + std::to_string(e.size) +
                                   " exceeds the read limit of " +
                                   std::to_string(impl_->options.max_read_size) + " bytes"));
  }
  // The declared size is untrusted: reserve no more than the data could
  // decode to at deflate's ratio limit; zstd can exceed that and grows the
  // vector as it goes.
  std::uint64_t plausible;
  if (!CheckedMul(e.compressed_size, kZipMaxDeflateRatio, &plausible)) plausible = e.size;
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
  return impl_->data.subspan(impl_->data_offsets[i], impl_->entries[i].compressed_size);
}

ByteView ZipReader::archive() const { return impl_->data; }

const MappedFile* ZipReader::file() const { return impl_->file.get(); }

Status ZipReader::CheckCrc32(const ZipEntry& entry, std::uint32_t crc) {
  if (crc == entry.crc32) return Status::Ok();
  return Corrupt(EntryContext(entry.name) + ": crc-32 mismatch: the directory says " +
                 zip_internal::Hex(entry.crc32, 8) + ", the data gives " +
                 zip_internal::Hex(crc, 8));
}

}  // namespace carton
