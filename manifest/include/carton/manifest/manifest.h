// The MANIFEST file of a carton: one `path=sha256` line per file, sorted by
// the bytes of the path (rules in manifest/FORMAT.md, section MANIFEST).
//
// Manifest is a plain value: it owns its entries, is cheap to move, and its
// const methods may be called from several threads at once. Parse() takes
// untrusted bytes and validates all of them before returning anything.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::manifest {

// Longest path accepted, in bytes: one that unpacks under any directory of
// up to 3 KiB on Linux (PATH_MAX 4096), whatever writes it.
inline constexpr std::size_t kMaxPathBytes = 1024;
// Longest component accepted, in bytes: NAME_MAX of Linux, macOS and
// Windows file systems.
inline constexpr std::size_t kMaxComponentBytes = 255;

// Checks one file path as it may appear in a MANIFEST or as a zip entry name
// (FORMAT.md, section Paths): non-empty, at most kMaxPathBytes, valid UTF-8,
// `/`-separated components of at most kMaxComponentBytes that are neither
// empty, `.` nor `..`, and that
// neither begin nor end with a space; no leading or trailing `/`, no `\`, no
// NUL or other control character (0x00-0x1f, 0x7f). Takes untrusted input.
// Returns OK or kInvalidArgument with a message naming the path, e.g.
// `path "a//b": empty component`. Readers of untrusted files report these
// as kCorrupt.
Status ValidateEntryPath(std::string_view path);

// The two names a carton reserves at its root (carton/FORMAT.md), which a
// MANIFEST never lists: MANIFEST itself, and LINKS (the URLs of files kept
// outside the zip).
inline constexpr std::string_view kManifestPath = "MANIFEST";
inline constexpr std::string_view kLinksPath = "LINKS";

// True for kManifestPath and kLinksPath.
bool IsReservedPath(std::string_view path);

// "sha256 <got> but MANIFEST says <expected>": the rule a file breaks when
// its bytes are not the ones MANIFEST lists, in the one wording every
// reader uses.
std::string DigestMismatch(const Digest& got, const Digest& expected);

// OK when `got` equals `expected`; otherwise kCorrupt
// "<what>: sha256 <got> but MANIFEST says <expected>" (`what` names the
// file).
Status CheckDigest(std::string_view what, const Digest& got, const Digest& expected);

struct ManifestEntry {
  std::string path;
  Digest sha256{};

  friend bool operator==(const ManifestEntry&, const ManifestEntry&) = default;
};

class Manifest {
 public:
  // An empty manifest (no entries).
  Manifest() = default;

  // Parses the bytes of a MANIFEST file. Untrusted input: every rule of
  // FORMAT.md is checked. Lines are split at their LAST `=`, since a sha256
  // never contains one, so a path may itself contain `=`. Zero bytes parse as
  // a manifest with no entries. Errors: kCorrupt, with a message naming the
  // line, e.g. `MANIFEST line 3: paths not sorted: "b" after "c"`.
  static Result<Manifest> Parse(ByteView bytes);

  // Builds a manifest from entries in any order, sorting them by the bytes of
  // their paths. Errors: kInvalidArgument for a path ValidateEntryPath
  // rejects, a reserved path (MANIFEST, LINKS) or a path given twice.
  static Result<Manifest> FromEntries(std::vector<ManifestEntry> entries);

  // The file's bytes: `path=<64 lowercase hex>\n` per entry, in order.
  // Parse(Serialize()) gives back an equal manifest.
  std::string Serialize() const;

  // "The manifest hash" (the model hash): sha256 of Serialize().
  Digest Hash() const;

  // The entry for `path`, or nullptr. Binary search. The pointer borrows from
  // this manifest and is valid until it is moved from or destroyed.
  const ManifestEntry* Find(std::string_view path) const;

  // Sorted strictly by the bytes of the path (unsigned comparison).
  const std::vector<ManifestEntry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  friend bool operator==(const Manifest&, const Manifest&) = default;

 private:
  explicit Manifest(std::vector<ManifestEntry> sorted) : entries_(std::move(sorted)) {}

  std::vector<ManifestEntry> entries_;
};

}  // namespace carton::manifest
