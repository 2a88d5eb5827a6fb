// Private: decides whether zstd is worth it for a file (pack --compression auto).
#pragma once

#include <cstdint>
#include <string>

namespace carton::internal {

// Compresses up to 256 KiB from the start and the middle of the file with
// zstd level 1; true when that shrinks it below 90%. Unreadable files give
// false (the real read reports the error).
bool ZstdPays(const std::string& path, std::uint64_t size);

}  // namespace carton::internal
