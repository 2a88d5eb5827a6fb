// A strict tar reader for ModelPack layers (tar.h). POSIX ustar (pax,
// IEEE 1003.1-2001) and GNU tar's extensions, read as far as the header
// fields this file names; anything else is refused.
#include "tar.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "carton/common/quote.h"

namespace carton::oci::internal {
namespace {

constexpr std::size_t kBlock = 512;
// A pax header or GNU long name larger than this is refused (a name is
// at most a few KiB; the limit keeps a hostile header from allocating).
constexpr std::uint64_t kMaxMetadataSize = std::uint64_t{1} << 20;
constexpr std::size_t kChunk = std::size_t{256} << 10;

// The header's fields: offset and length.
struct Field {
  std::size_t offset, length;
};
constexpr Field kName{0, 100};
constexpr Field kSize{124, 12};
constexpr Field kChecksum{148, 8};
constexpr std::size_t kTypeflag = 156;
constexpr Field kLinkname{157, 100};
constexpr Field kMagic{257, 8};  // magic and version
constexpr Field kPrefix{345, 155};

std::string_view View(const std::byte* block, Field f) {
  return {reinterpret_cast<const char*>(block) + f.offset, f.length};
}

// A NUL-terminated (or full-length) text field.
std::string Text(const std::byte* block, Field f) {
  std::string_view v = View(block, f);
  return std::string(v.substr(0, v.find('\0')));
}

// An octal number (spaces and NULs around it), or GNU's base-256 form.
std::optional<std::uint64_t> Number(const std::byte* block, Field f) {
  const std::string_view v = View(block, f);
  const auto first = static_cast<unsigned char>(v[0]);
  if ((first & 0x80) != 0) {
    if (first == 0xff) return std::nullopt;  // negative
    std::uint64_t n = first & 0x7f;
    for (std::size_t i = 1; i < v.size(); ++i) {
      if (n > (UINT64_MAX >> 8)) return std::nullopt;
      n = (n << 8) | static_cast<unsigned char>(v[i]);
    }
    return n;
  }
  std::size_t i = 0;
  while (i < v.size() && v[i] == ' ') ++i;
  std::uint64_t n = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '7'; ++i) {
    if (n > (UINT64_MAX >> 3)) return std::nullopt;
    n = (n << 3) | static_cast<std::uint64_t>(v[i] - '0');
  }
  for (; i < v.size(); ++i) {
    if (v[i] != ' ' && v[i] != '\0') return std::nullopt;
  }
  return n;
}

bool ChecksumMatches(const std::byte* block) {
  const std::optional<std::uint64_t> stored = Number(block, kChecksum);
  if (!stored) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;  // some old tars summed signed chars
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum.offset && i < kChecksum.offset + kChecksum.length;
    const auto b =
        in_field ? static_cast<unsigned char>(' ') : static_cast<unsigned char>(block[i]);
    unsigned_sum += b;
    signed_sum += static_cast<signed char>(b);
  }
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

bool AllZero(const std::byte* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::byte b) { return b == std::byte{0}; });
}

std::uint64_t Padding(std::uint64_t size) { return (kBlock - size % kBlock) % kBlock; }

// What an entry type other than a file or directory is, for the refusal.
std::string TypeName(char type) {
  switch (type) {
    case '1':
      return "a hard link";
    case '2':
      return "a symlink";
    case '3':
      return "a character device";
    case '4':
      return "a block device";
    case '6':
      return "a FIFO";
    case 'S':
      return "a sparse file";
    default:
      return "an entry of type " + QuoteForMessage(std::string(1, type));
  }
}

// The entry's name as written, less a leading "./" (and a directory's
// trailing "/"): the path relative to the archive's root.
std::string Clean(std::string name, bool directory) {
  while (name.starts_with("./")) name.erase(0, 2);
  if (directory) {
    while (!name.empty() && name.back() == '/') name.pop_back();
    if (name == ".") name.clear();
  }
  return name;
}

}  // namespace

TarReader::TarReader(ByteSource* source, std::string where, std::uint64_t max_entry_size)
    : source_(source), where_(std::move(where)), max_entry_size_(max_entry_size) {}

Status TarReader::ReadExact(std::byte* out, std::size_t n) {
  for (std::size_t got = 0; got < n;) {
    CARTON_ASSIGN_OR_RETURN(const std::size_t r,
                            source_->Read(MutableByteView(out + got, n - got)));
    if (r == 0) {
      return Corrupt(where_ + ": the tar ends early, at byte " + std::to_string(offset_ + got));
    }
    got += r;
  }
  offset_ += n;
  return Status::Ok();
}

Result<bool> TarReader::ReadBlock(std::byte* block) {
  CARTON_ASSIGN_OR_RETURN(const std::size_t first, source_->Read(MutableByteView(block, kBlock)));
  if (first == 0) return false;
  offset_ += first;
  if (first < kBlock) CARTON_RETURN_IF_ERROR(ReadExact(block + first, kBlock - first));
  return true;
}

Result<std::string> TarReader::ReadSmallData(std::uint64_t size, const char* what) {
  if (size > kMaxMetadataSize) {
    return Corrupt(where_ + ": a " + what + " of " + std::to_string(size) +
                   " bytes, more than the limit of " + std::to_string(kMaxMetadataSize));
  }
  std::string data(static_cast<std::size_t>(size), '\0');
  CARTON_RETURN_IF_ERROR(ReadExact(reinterpret_cast<std::byte*>(data.data()), data.size()));
  CARTON_RETURN_IF_ERROR(SkipPadding(size));
  return data;
}

Status TarReader::SkipPadding(std::uint64_t size) {
  std::array<std::byte, kBlock> pad{};
  return ReadExact(pad.data(), static_cast<std::size_t>(Padding(size)));
}

Status TarReader::DrainZeros() {
  buffer_.resize(kChunk);
  for (;;) {
    CARTON_ASSIGN_OR_RETURN(const std::size_t n, source_->Read(MutableByteView(buffer_)));
    if (n == 0) return Status::Ok();
    if (!AllZero(buffer_.data(), n)) {
      return Corrupt(where_ + ": bytes other than zeros after the end of the tar archive");
    }
    offset_ += n;
  }
}

// pax records: "<length> <key>=<value>\n", the length counting the whole
// record.
Status TarReader::ApplyPax(const std::string& records, bool global) {
  std::string_view rest = records;
  while (!rest.empty()) {
    std::uint64_t length = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), length);
    const std::size_t digits = static_cast<std::size_t>(end - rest.data());
    if (ec != std::errc() || digits == 0 || length > rest.size() || length <= digits + 3 ||
        rest[digits] != ' ' || rest[length - 1] != '\n') {
      return Corrupt(where_ + ": a malformed pax header record");
    }
    const std::string_view record = rest.substr(digits + 1, length - digits - 2);
    rest.remove_prefix(length);
    const std::size_t eq = record.find('=');
    if (eq == std::string_view::npos) return Corrupt(where_ + ": a pax record without '='");
    const std::string_view key = record.substr(0, eq);
    const std::string_view value = record.substr(eq + 1);
    if ((key == "path" || key == "size") && global) {
      return Unsupported(where_ + ": a pax global header that sets " + std::string(key));
    }
    if (key == "path") next_name_ = std::string(value);
    if (key == "size") {
      std::uint64_t size = 0;
      const auto [e, err] = std::from_chars(value.data(), value.data() + value.size(), size);
      if (err != std::errc() || e != value.data() + value.size() || value.empty()) {
        return Corrupt(where_ + ": a pax size record that is not a number");
      }
      next_size_ = size;
    }
  }
  return Status::Ok();
}

Result<std::optional<TarEntry>> TarReader::Next() {
  CARTON_RETURN_IF_ERROR(ReadData([](ByteView) { return Status::Ok(); }));
  std::array<std::byte, kBlock> block{};
  for (;;) {
    CARTON_ASSIGN_OR_RETURN(const bool got, ReadBlock(block.data()));
    if (!got) return Corrupt(where_ + ": the tar has no end-of-archive blocks");
    if (AllZero(block.data(), kBlock)) {
      if (next_name_ || next_size_) return Corrupt(where_ + ": an extended header with no entry");
      CARTON_RETURN_IF_ERROR(DrainZeros());
      return std::optional<TarEntry>();
    }
    if (!ChecksumMatches(block.data())) {
      return Corrupt(where_ + ": a tar header at byte " + std::to_string(offset_ - kBlock) +
                     " has a wrong checksum");
    }
    const std::string_view magic = View(block.data(), kMagic);
    const bool posix = magic == std::string_view(
                                    "ustar\0"
                                    "00",
                                    8);
    if (!posix && magic != std::string_view("ustar  \0", 8)) {
      return Corrupt(where_ + ": a tar header at byte " + std::to_string(offset_ - kBlock) +
                     " is not ustar");
    }
    const std::optional<std::uint64_t> size = Number(block.data(), kSize);
    if (!size) return Corrupt(where_ + ": a tar header's size is not a number");
    const char type = static_cast<char>(block[kTypeflag]);
    if (type == 'x' || type == 'g') {
      CARTON_ASSIGN_OR_RETURN(const std::string records, ReadSmallData(*size, "pax header"));
      CARTON_RETURN_IF_ERROR(ApplyPax(records, type == 'g'));
      continue;
    }
    if (type == 'L' || type == 'K') {
      CARTON_ASSIGN_OR_RETURN(std::string name, ReadSmallData(*size, "GNU long name"));
      if (type == 'L') next_name_ = name.substr(0, name.find('\0'));
      continue;
    }
    return TakeEntry(block.data(), posix, *size);
  }
}

Result<std::optional<TarEntry>> TarReader::TakeEntry(const std::byte* block, bool posix,
                                                     std::uint64_t size) {
  std::string name = next_name_ ? *next_name_ : Text(block, kName);
  if (!next_name_ && posix && !Text(block, kPrefix).empty()) {
    name = Text(block, kPrefix) + "/" + name;
  }
  const std::uint64_t entry_size = next_size_ ? *next_size_ : size;
  next_name_.reset();
  next_size_.reset();
  const char type = static_cast<char>(block[kTypeflag]);
  const bool directory = type == '5';
  if (!directory && type != '0' && type != '\0' && type != '7') {
    std::string what = TypeName(type);
    if (type == '1' || type == '2') what += " to " + QuoteForMessage(Text(block, kLinkname));
    return Unsupported(where_ + ": " + QuoteForMessage(name) + ": " + what +
                       "; only regular files and directories are imported");
  }
  if (directory && entry_size != 0) {
    return Corrupt(where_ + ": " + QuoteForMessage(name) + ": a directory with " +
                   std::to_string(entry_size) + " bytes of data");
  }
  if (entry_size > max_entry_size_) {
    return Unsupported(where_ + ": " + QuoteForMessage(name) + ": " + std::to_string(entry_size) +
                       " bytes, more than the limit of " + std::to_string(max_entry_size_));
  }
  remaining_ = entry_size;
  pending_padding_ = Padding(entry_size);
  return std::optional<TarEntry>(
      TarEntry{Clean(std::move(name), directory), directory, entry_size});
}

Status TarReader::ReadData(const std::function<Status(ByteView)>& sink) {
  buffer_.resize(kChunk);
  while (remaining_ > 0) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, kChunk));
    CARTON_RETURN_IF_ERROR(ReadExact(buffer_.data(), n));
    remaining_ -= n;
    CARTON_RETURN_IF_ERROR(sink(ByteView(buffer_.data(), n)));
  }
  if (pending_padding_ > 0) {
    std::array<std::byte, kBlock> pad{};
    CARTON_RETURN_IF_ERROR(ReadExact(pad.data(), static_cast<std::size_t>(pending_padding_)));
    pending_padding_ = 0;
  }
  return Status::Ok();
}

}  // namespace carton::oci::internal
