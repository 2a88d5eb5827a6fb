// MANIFEST parsing and writing (FORMAT.md, section MANIFEST).
#include "carton/manifest/manifest.h"

#include <algorithm>
#include <optional>
#include <string>

#include "carton/common/quote.h"

namespace carton::manifest {

namespace {

constexpr std::size_t kHexDigits = 64;

// Paths order by their bytes. std::string_view comparison is exactly that:
// char_traits<char> compares as unsigned char, like memcmp.
bool PathLess(const ManifestEntry& a, const ManifestEntry& b) { return a.path < b.path; }

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

Status BadSha256(std::string_view hex) {
  if (!hex.empty() && hex.front() == ' ') return Corrupt("space after \"=\"");
  if (!hex.empty() && hex.back() == ' ') return Corrupt("space after the sha256");
  if (hex.size() == kHexDigits && std::all_of(hex.begin(), hex.end(), IsHexDigit)) {
    return Corrupt("sha256 " + QuoteForMessage(hex) +
                   " has uppercase hex digits; only lowercase is allowed");
  }
  return Corrupt("sha256 " + QuoteForMessage(hex) + " is not 64 lowercase hex digits (" +
                 std::to_string(hex.size()) + " bytes)");
}

// One line, without its "\n". Errors are kCorrupt; the caller adds the line
// number.
Result<ManifestEntry> ParseLine(std::string_view line) {
  if (line.empty()) return Corrupt("empty line");
  if (line.back() == '\r') {
    return Corrupt("line ends with \"\\r\\n\"; lines must end with \"\\n\" only");
  }
  // The last "=": a sha256 never contains one, so the path may.
  std::size_t eq = line.rfind('=');
  if (eq == std::string_view::npos) {
    return Corrupt("no \"=\" between path and sha256 in " + QuoteForMessage(line));
  }
  std::string_view path = line.substr(0, eq);
  std::string_view hex = line.substr(eq + 1);
  if (!path.empty() && path.back() == ' ') return Corrupt("space before \"=\"");
  std::optional<Digest> digest = ParseHex(hex);
  if (!digest) return BadSha256(hex);
  if (Status s = ValidateEntryPath(path); !s.ok()) return Corrupt(s.message());
  if (IsReservedPath(path)) {
    return Corrupt(QuoteForMessage(path) +
                   " is listed; MANIFEST lists every file except MANIFEST and LINKS");
  }
  return ManifestEntry{std::string(path), *digest};
}

}  // namespace

Result<Manifest> Manifest::Parse(ByteView bytes) {
  std::string_view text = AsChars(bytes);
  std::vector<ManifestEntry> entries;
  entries.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
  std::size_t pos = 0;
  for (std::size_t line_no = 1; pos < text.size(); ++line_no) {
    const std::string context = "MANIFEST line " + std::to_string(line_no);
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      return Corrupt(context + ": last line does not end with \"\\n\"");
    }
    Result<ManifestEntry> entry = ParseLine(text.substr(pos, nl - pos));
    if (!entry.ok()) return entry.status().WithContext(context);
    pos = nl + 1;
    if (!entries.empty()) {
      const std::string& prev = entries.back().path;
      if (entry->path == prev) {
        return Corrupt(context + ": duplicate path " + QuoteForMessage(prev));
      }
      if (entry->path < prev) {
        return Corrupt(context + ": paths not sorted: " + QuoteForMessage(entry->path) + " after " +
                       QuoteForMessage(prev));
      }
    }
    entries.push_back(std::move(entry).value());
  }
  return Manifest(std::move(entries));
}

Result<Manifest> Manifest::FromEntries(std::vector<ManifestEntry> entries) {
  for (const ManifestEntry& e : entries) {
    CARTON_RETURN_IF_ERROR(ValidateEntryPath(e.path));
    if (IsReservedPath(e.path)) {
      return InvalidArgument(QuoteForMessage(e.path) +
                             " may not be listed; MANIFEST lists every file except MANIFEST "
                             "and LINKS");
    }
  }
  std::sort(entries.begin(), entries.end(), PathLess);
  auto dup = std::adjacent_find(entries.begin(), entries.end(),
                                [](const auto& a, const auto& b) { return a.path == b.path; });
  if (dup != entries.end()) return InvalidArgument("duplicate path " + QuoteForMessage(dup->path));
  return Manifest(std::move(entries));
}

std::string Manifest::Serialize() const {
  std::size_t size = 0;
  for (const ManifestEntry& e : entries_) size += e.path.size() + kHexDigits + 2;
  std::string out;
  out.reserve(size);
  for (const ManifestEntry& e : entries_) {
    out += e.path;
    out += '=';
    out += ToHex(e.sha256);
    out += '\n';
  }
  return out;
}

Digest Manifest::Hash() const { return Sha256Of(AsBytes(Serialize())); }

const ManifestEntry* Manifest::Find(std::string_view path) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), path,
                             [](const ManifestEntry& e, std::string_view p) { return e.path < p; });
  if (it == entries_.end() || it->path != path) return nullptr;
  return &*it;
}

std::string DigestMismatch(const Digest& got, const Digest& expected) {
  return "sha256 " + ToHex(got) + " but MANIFEST says " + ToHex(expected);
}

Status CheckDigest(std::string_view what, const Digest& got, const Digest& expected) {
  if (got == expected) return Status::Ok();
  return Corrupt(std::string(what) + ": " + DigestMismatch(got, expected));
}

}  // namespace carton::manifest
