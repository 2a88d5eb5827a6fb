// Symlink entries of a carton (carton/FORMAT.md, "Symlink entries").
//
// The original implementation stores a symlink that stays inside model/ as
// a zip symlink entry: Unix mode S_IFLNK, the entry's data the relative
// target, its MANIFEST line the sha256 of the file it points to. Every
// carton reader accepts such an entry only through ResolveSymlinkEntry.
// Functions here are stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/manifest/manifest.h"
#include "carton/zip/reader.h"

namespace carton {

// Most bytes a symlink entry's target may take, refused before decoding.
inline constexpr std::uint64_t kMaxSymlinkTargetSize = 4096;

// Resolves symlink entry `link` of `zip` (untrusted input). REQUIRES:
// link.is_symlink. The entry must lie under model/ and its data, at most
// kMaxSymlinkTargetSize bytes, must be a relative path without NUL or
// backslash that, resolved against the entry's directory without leaving
// model/, names a regular file entry of `zip` (not a directory, not another
// symlink). When `m` is given and lists both, the link's MANIFEST line must
// carry its target's sha256. Returns the target entry's name; kCorrupt
// naming `link` and the rule broken; kUnsupported for an unknown method.
Result<std::string> ResolveSymlinkEntry(const ZipReader& zip, const ZipEntry& link,
                                        const manifest::Manifest* m = nullptr);

// The path to write on disk for a symlink at `link` pointing at `target`
// (both entry names): `target` relative to the directory of `link`.
std::string SymlinkPathOnDisk(std::string_view link, std::string_view target);

}  // namespace carton
