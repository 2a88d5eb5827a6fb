// Private: reading the small metadata entries of a .carton, and the entry
// rules every reader of a whole carton applies (info, unpack and verify see
// the same carton).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/limits.h"
#include "carton/carton/zip.h"
#include "carton/common/status.h"
#include "carton/manifest/manifest.h"

namespace carton::internal {

// Reads entry `name` (at most `limit` bytes, refused before decoding) as
// text. kNotFound if absent; errors name the entry.
Result<std::string> ReadTextEntry(const ZipReader& zip, std::string_view name,
                                  std::uint64_t limit = kMaxManifestSize);

// One broken rule: the entry at fault and the rule.
struct CartonProblem {
  std::string where;
  std::string message;
  StatusCode code = StatusCode::kCorrupt;  // kUnsupported for a method
};

// The rules on a carton's entries that need no file data but a symlink
// entry's small target (FORMAT.md, "Reading a carton"): a symlink entry
// must resolve (ResolveSymlinkEntry); no encrypted entries; only stored,
// deflate and zstd; every file entry except MANIFEST and LINKS is listed in
// MANIFEST. (LINKS coverage of the other files: LinkedFiles in links.h.)
// Returns every problem, in entry order.
std::vector<CartonProblem> CheckEntryRules(const ZipReader& zip, const manifest::Manifest& m);

// The first problem of CheckEntryRules as a Status: kCorrupt, or
// kUnsupported for an unknown compression method.
Status FirstEntryProblem(const ZipReader& zip, const manifest::Manifest& m);

}  // namespace carton::internal
