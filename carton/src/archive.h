// Private: reading the small metadata entries of a .carton.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/zip.h"
#include "carton/common/status.h"

namespace carton::internal {

// Metadata files are small; anything larger is refused before decoding.
inline constexpr std::uint64_t kMaxMetadataEntrySize = 64ull << 20;

// Reads entry `name` (at most `limit` bytes decoded) as text. kNotFound if
// absent; errors name the entry.
Result<std::string> ReadTextEntry(const ZipReader& zip, std::string_view name,
                                  std::uint64_t limit = kMaxMetadataEntrySize);

}  // namespace carton::internal
